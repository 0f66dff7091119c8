#include "cli/map_formats.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

#include "convlab/npy.hpp"

namespace convlab::cli {

namespace {

// Images computed per call of IndexMap::images: a row of a grid is walked in pieces of this many
// cells, so a grid of a map with very long rows needs no more memory than a short one.
constexpr dim_t kRowPiece = 4096;

int digits(dim_t v) {
    int d = 1;
    for (; v >= 10; v /= 10) ++d;
    return d;
}

// The domain seen as blocks of rows x cols: the last two dims (rank 1: one row of all of it),
// and the block count over the dims before them.
struct Blocks {
    dim_t rows = 1, cols = 1, count = 1;
    explicit Blocks(const Shape& s) {
        const int r = s.rank();
        if (r >= 1) cols = s.dims[static_cast<std::size_t>(r - 1)];
        if (r >= 2) rows = s.dims[static_cast<std::size_t>(r - 2)];
        for (int a = 0; a < r - 2; ++a) count *= s.dims[static_cast<std::size_t>(a)];
    }
};

bool gather(const IndexMap& m) {
    return m.kind() == IndexMap::Kind::Gather;
}

// "dst(n=0,g=1,row=*,col=*)": the block's fixed coordinates, its two walked dims as *.
std::string block_name(const IndexMap& m, dim_t block) {
    const Shape& s = m.domain();
    const int r = s.rank();
    std::vector<dim_t> c(static_cast<std::size_t>(r), 0);
    dim_t b = block;
    for (int a = r - 3; a >= 0; --a) {
        c[static_cast<std::size_t>(a)] = b % s.dims[static_cast<std::size_t>(a)];
        b /= s.dims[static_cast<std::size_t>(a)];
    }
    std::string t = gather(m) ? "dst(" : "src(";
    for (int a = 0; a < r; ++a) {
        t += (a ? "," : "") + s.names[static_cast<std::size_t>(a)] + "=";
        t += a < r - 2 ? std::to_string(c[static_cast<std::size_t>(a)]) : std::string("*");
    }
    return t + ")";
}

// What a cell holds, for the legend of both formats.
std::string legend(const IndexMap& m, std::string_view padding) {
    return gather(m) ? "cell: the src linear index each dst element reads; " +
                           std::string(padding) + " = a padding zero"
                     : "cell: the dst linear index each src element adds into; " +
                           std::string(padding) + " = adds nowhere";
}

std::string title(const IndexMap& m) {
    return m.name() + " (" + (gather(m) ? "gather" : "reduce") + "): src " + m.src().str() +
           " -> dst " + m.dst().str();
}

// Calls cell(col, image) for every cell of row `row` of block `block`, in pieces of kRowPiece.
template <class F>
void for_each_cell(const IndexMap& m, const Blocks& bl, dim_t block, dim_t row,
                   std::vector<dim_t>& buf, F&& cell) {
    const dim_t base = (block * bl.rows + row) * bl.cols;
    for (dim_t c0 = 0; c0 < bl.cols; c0 += kRowPiece) {
        const dim_t c1 = std::min(bl.cols, c0 + kRowPiece);
        m.images(base + c0, base + c1, buf.data());
        for (dim_t c = c0; c < c1; ++c) cell(c, buf[static_cast<std::size_t>(c - c0)]);
    }
}

std::string padded(std::string_view s, int width) {
    std::string r(static_cast<std::size_t>(std::max(0, width - static_cast<int>(s.size()))), ' ');
    return r.append(s);
}

std::string tex_escape(std::string_view s) {
    std::string r;
    for (const char c : s) {
        switch (c) {
            case '_':
            case '&':
            case '%':
            case '#':
            case '$':
            case '{':
            case '}':
                r += '\\';
                r += c;
                break;
            case '~':
                r += "\\textasciitilde{}";
                break;
            case '^':
                r += "\\textasciicircum{}";
                break;
            case '\\':
                r += "\\textbackslash{}";
                break;
            default:
                r += c;
        }
    }
    return r;
}

}  // namespace

void write_map_npy(const IndexMap& m, const std::string& path) {
    write_npy_int64(path, m.domain().dims,
                    [&](dim_t begin, dim_t end, std::int64_t* out) { m.images(begin, end, out); });
}

void print_map_grid(std::ostream& out, const IndexMap& m) {
    const Blocks bl(m.domain());
    const bool one_row = m.domain().rank() < 2;
    // Widths fixed before the walk from the sizes alone: an image is below the codomain's size.
    const int w = std::max(digits(std::max<dim_t>(m.codomain().numel() - 1, 0)),
                           digits(std::max<dim_t>(bl.cols - 1, 0)));
    const int lw = one_row ? 0 : digits(std::max<dim_t>(bl.rows - 1, 0));
    std::string rule = std::string(static_cast<std::size_t>(lw), ' ') + " +";
    for (dim_t c = 0; c < bl.cols; ++c)
        rule += std::string(static_cast<std::size_t>(w) + 2, '-') + "+";
    std::vector<dim_t> buf(static_cast<std::size_t>(std::min(bl.cols, kRowPiece)));
    out << "# " << title(m) << "\n# " << legend(m, ".") << "\n";
    for (dim_t b = 0; b < bl.count && out; ++b) {
        out << "\n"
            << block_name(m, b) << "\n"
            << std::string(static_cast<std::size_t>(lw), ' ') << " ";
        for (dim_t c = 0; c < bl.cols; ++c)
            out << "  " << padded(std::to_string(c), w) << (c + 1 < bl.cols ? " " : "");
        out << "\n" << rule << "\n";
        for (dim_t r = 0; r < bl.rows && out; ++r) {
            out << (one_row ? std::string() : padded(std::to_string(r), lw)) << " |";
            for_each_cell(m, bl, b, r, buf, [&](dim_t, dim_t image) {
                out << " " << padded(image < 0 ? "." : std::to_string(image), w) << " |";
            });
            out << "\n" << rule << "\n";
        }
    }
}

void print_map_tex(std::ostream& out, const IndexMap& m) {
    const dim_t cells = m.domain().numel();
    if (cells > kMaxTexCells)
        throw Error("--format tex: map " + m.name() + " has " + std::to_string(cells) +
                    " cells, more than the " + std::to_string(kMaxTexCells) +
                    " a picture may draw (use grid or npy)");
    const Blocks bl(m.domain());
    const int w = digits(std::max<dim_t>(m.codomain().numel() - 1, 0));
    const int unit_mm = 2 * w + 3;  // a cell as wide as its widest index, at \scriptsize
    std::vector<dim_t> buf(static_cast<std::size_t>(std::min(bl.cols, kRowPiece)));
    out << "% " << title(m) << "\n% " << legend(m, "shaded") << "\n% Needs \\usepackage{tikz}.\n";
    for (dim_t b = 0; b < bl.count && out; ++b) {
        out << "\\begin{tikzpicture}[x=" << unit_mm << "mm,y=5mm,font=\\scriptsize]\n"
            << "  \\node[anchor=south west,inner sep=0] at (0,1) {\\texttt{"
            << tex_escape(block_name(m, b)) << "}};\n";
        for (dim_t r = 0; r < bl.rows; ++r)
            for_each_cell(m, bl, b, r, buf, [&](dim_t c, dim_t image) {
                if (image < 0)
                    out << "  \\fill[black!12] (" << c << "," << -r << ") rectangle (" << c + 1
                        << "," << -r - 1 << ");\n";
            });
        out << "  \\draw[gray] (0,0) grid (" << bl.cols << "," << -bl.rows << ");\n";
        for (dim_t r = 0; r < bl.rows; ++r)
            for_each_cell(m, bl, b, r, buf, [&](dim_t c, dim_t image) {
                if (image >= 0)
                    out << "  \\node at (" << c << ".5,-" << r << ".5) {" << image << "};\n";
            });
        for (dim_t r = 0; r < bl.rows; ++r)
            out << "  \\node[left,gray] at (0,-" << r << ".5) {" << r << "};\n";
        for (dim_t c = 0; c < bl.cols; ++c)
            out << "  \\node[above,gray] at (" << c << ".5,0) {" << c << "};\n";
        out << "\\end{tikzpicture}\n";
    }
}

}  // namespace convlab::cli
