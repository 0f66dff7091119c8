// A panel as drawing primitives (export/view_drawing.hpp), and their SVG.
#include "export/view_drawing.hpp"
#include "export/xml_escape.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace convlab::app {

namespace {

// Appends primitives to a list.
struct Out {
    std::vector<DrawPrim>& v;
    void rect(float x0, float y0, float x1, float y1, Rgba fill, Rgba stroke, float width = 1) {
        v.push_back(rect_prim(x0, y0, x1, y1, fill, stroke, width));
    }
    void line(float x0, float y0, float x1, float y1, Rgba c) {
        v.push_back(line_prim(x0, y0, x1, y1, c));
    }
    // At (x, y), or centred between x and x1 when x1 > x.
    void text(float x, float y, float size, Rgba c, std::string t, float x1 = 0) {
        DrawPrim p;
        p.kind = DrawPrim::Kind::Text;
        p.x0 = x;
        p.y0 = y;
        p.x1 = x1 > x ? x1 : x;
        p.centred = x1 > x;
        p.size = size;
        p.stroke = c;
        p.text = std::move(t);
        v.push_back(std::move(p));
    }
};

// Relative luminance (Rec. 709), as the window's palette computes it: values are written black
// on light cells and white on dark ones.
float luminance(Rgba c) {
    constexpr float s = 1.0f / 255.0f;
    return 0.2126f * (static_cast<float>(c & 0xff) * s) +
           0.7152f * (static_cast<float>((c >> 8) & 0xff) * s) +
           0.0722f * (static_cast<float>((c >> 16) & 0xff) * s);
}

constexpr Rgba kBlack = 0xff000000u, kWhite = 0xffffffffu;

}  // namespace

double room_left_of(const ViewModel& v, std::size_t i) {
    const Panel& p = v.panels[i];
    double room = 1e30;
    for (std::size_t j = 0; j < v.panels.size(); ++j) {
        const Panel& o = v.panels[j];
        if (j == i || o.hidden || o.x >= p.x) continue;
        // Its cells or its title beside this panel's rows.
        if (o.y - o.title_room < p.y + p.height && o.y + o.height > p.y)
            room = std::min(room, p.x - (o.x + o.width));
    }
    return std::max(room, 0.0);
}

void paint_panel(const Panel& pn, const PanelState& ps, const PanelPaint& pp,
                 std::vector<DrawPrim>& list) {
    Out out{list};
    const float z = pp.z;
    const float px = pp.ox + static_cast<float>(pn.x) * z;
    const float py = pp.oy + static_cast<float>(pn.y) * z;
    const float pw = static_cast<float>(pn.width) * z, ph = static_cast<float>(pn.height) * z;
    if (px > pp.clip_x1 || py > pp.clip_y1 || px + pw < pp.clip_x0 || py + ph < pp.clip_y0) return;
    const float tw = static_cast<float>(pn.pad_left + pn.cols + pn.pad_right);
    const float th = static_cast<float>(pn.pad_top + pn.rows + pn.pad_bottom);
    const dim_t per_row =
        pn.tiles_per_row > 0 ? std::min(pn.tiles_per_row, pn.tiles_x) : pn.tiles_x;
    const dim_t wraps = (pn.tiles_x + per_row - 1) / per_row;
    float label_size = pp.label_size;
    if (z < 3.0f) {
        // Cells under 3 px: the panel as one picture (the canvas's texture) and its frame.
        DrawPrim img;
        img.kind = DrawPrim::Kind::Image;
        img.x0 = px;
        img.y0 = py;
        img.x1 = px + static_cast<float>(std::ceil(pn.width)) * z;
        img.y1 = py + static_cast<float>(std::ceil(pn.height)) * z;
        list.push_back(std::move(img));
        out.rect(px - 1, py - 1, px + pw + 1, py + ph + 1, 0, pp.grid);
    } else {
        // One digit size for every cell (value_size): a value too wide for its cell is written
        // shorter (fewer digits, then the scientific form) or not at all, never cut.
        const float fsz = pp.value_size;
        const bool text = fsz > 0.0f;
        // Tile label: the tile dims of its first element ("c=1", "n=0 g=1").
        // With across_only, only the dims that change along a row of tiles (TileX: "c=1" where
        // the first tile of the row says "k=0 c=0"), where the panel has any.
        bool any_across = false;
        for (std::size_t d = 0; d < pn.roles.size(); ++d)
            any_across |= pn.roles[d] == Role::TileX && pn.shape.dims[d] > 1;
        const auto tile_label = [&](dim_t txi, dim_t tyi, bool across_only) {
            const auto first = linear_at(pn, txi, tyi, 0, 0);
            std::vector<dim_t> c(pn.shape.dims.size());
            pn.shape.coord_of(first, c);
            std::string lab;
            for (std::size_t d = 0; d < c.size(); ++d)
                if ((pn.roles[d] == Role::TileX ||
                     (pn.roles[d] == Role::TileY && !(across_only && any_across))) &&
                    pn.shape.dims[d] > 1)
                    lab +=
                        (lab.empty() ? "" : " ") + pn.shape.names[d] + "=" + std::to_string(c[d]);
            return lab;
        };
        const auto label_w = [&](const std::string& lab) {
            return pp.text_width(lab, label_size) + label_size * 0.5f;
        };
        // Every label_every-th tile of a row is labelled, the row's first with all of its tile
        // dims where that fits before the next label, the others with the dims along the row:
        // labels wider than a tile (with a gap of half a character) ran into each other
        // ("c=0c=1c=2" over 5-pixel cells). Sized by the last tile's labels, the widest.
        dim_t label_every = 1;
        bool full_first = true;
        const float pitch = (tw + 1.0f) * z;
        if (pn.tiles_x * pn.tiles_y > 1) {
            float across = label_w(tile_label(pn.tiles_x - 1, pn.tiles_y - 1, true));
            if (across > pitch && label_size > pp.min_label) {
                label_size = std::max(pp.min_label, label_size * pitch / across);
                across = label_w(tile_label(pn.tiles_x - 1, pn.tiles_y - 1, true));
            }
            label_every = std::max<dim_t>(1, static_cast<dim_t>(std::ceil(across / pitch)));
            full_first = label_w(tile_label(pn.tiles_x - 1, pn.tiles_y - 1, false)) <=
                             static_cast<float>(label_every) * pitch ||
                         per_row == 1;
        }
        const dim_t slots_y = wraps * pn.tiles_y;
        for (dim_t sr = 0; sr < slots_y; ++sr) {
            const float ty0 = py + static_cast<float>(sr) * (th + 1.0f) * z;
            if (ty0 > pp.clip_y1 || ty0 + th * z < pp.clip_y0) continue;
            for (dim_t sc = 0; sc < per_row; ++sc) {
                const float tx0 = px + static_cast<float>(sc) * (tw + 1.0f) * z;
                if (tx0 > pp.clip_x1 || tx0 + tw * z < pp.clip_x0) continue;
                const dim_t tyi = sr / wraps, txi = (sr % wraps) * per_row + sc;
                if (txi >= pn.tiles_x) continue;
                // Above the tile, clear of a lesson's outline of its first row (lesson 17's
                // "c=0" was crossed by it).
                const float lift = pp.lift;
                if (pn.tiles_x * pn.tiles_y > 1 && (z >= label_size + lift || sr == 0) &&
                    sc % label_every == 0)
                    out.text(tx0, ty0 - label_size - lift, label_size, pp.dim_text,
                             tile_label(txi, tyi, sc > 0 || !full_first));
                // A row of tiles whose label (its TileY dims: "k=1") has no room above it goes
                // left of its first tile, in the gap between panels, where it fits there.
                if (sc == 0 && sr % wraps == 0 && pn.tiles_y > 1 &&
                    (sr > 0 ? z < label_size + lift : !full_first)) {
                    std::vector<dim_t> c(pn.shape.dims.size());
                    pn.shape.coord_of(linear_at(pn, txi, tyi, 0, 0), c);
                    std::string rl;
                    for (std::size_t d = 0; d < c.size(); ++d)
                        if (pn.roles[d] == Role::TileY && pn.shape.dims[d] > 1)
                            rl += (rl.empty() ? "" : " ") + pn.shape.names[d] + "=" +
                                  std::to_string(c[d]);
                    const float room = std::min(pp.left_room, px - pp.min_x) * 0.9f;
                    float rs = label_size;
                    float w = pp.text_width(rl, rs);
                    if (w * 1.15f > room && rs > pp.min_label) {
                        rs = std::max(pp.min_label, rs * room / (w * 1.15f));
                        w = pp.text_width(rl, rs);
                    }
                    if (!rl.empty() && w * 1.15f <= room)
                        out.text(tx0 - w * 1.15f, ty0 + (th * z - rs) * 0.5f, rs, pp.dim_text, rl);
                }
                // Padding border (zeros).
                if (pn.pad_top + pn.pad_bottom + pn.pad_left + pn.pad_right > 0) {
                    for (dim_t r = 0; r < static_cast<dim_t>(th); ++r)
                        for (dim_t q = 0; q < static_cast<dim_t>(tw); ++q) {
                            if (r >= pn.pad_top && r < pn.pad_top + pn.rows && q >= pn.pad_left &&
                                q < pn.pad_left + pn.cols)
                                continue;
                            const float ax = tx0 + static_cast<float>(q) * z,
                                        ay = ty0 + static_cast<float>(r) * z;
                            out.rect(ax, ay, ax + z, ay + z, pp.padding, 0);
                            out.line(ax, ay, ax + z, ay + z, pp.grid);
                            if (z >= 6) out.rect(ax, ay, ax + z, ay + z, 0, pp.grid);
                            if (text)
                                out.text(ax + z * 0.35f, ay + z * 0.3f, fsz * 0.8f, pp.dim_text,
                                         "0");
                        }
                }
                // Visible data cells of the tile.
                const float dx0 = tx0 + static_cast<float>(pn.pad_left) * z;
                const float dy0 = ty0 + static_cast<float>(pn.pad_top) * z;
                // Clamped before the conversion: an unbounded clip (the SVG's) is far outside
                // dim_t's range.
                const auto cells_to = [&](float v, dim_t n) {
                    return static_cast<dim_t>(std::clamp(v, -1.0f, static_cast<float>(n)));
                };
                const dim_t r0 = std::max<dim_t>(0, cells_to((pp.clip_y0 - dy0) / z, pn.rows));
                const dim_t r1 =
                    std::min<dim_t>(pn.rows, cells_to((pp.clip_y1 - dy0) / z, pn.rows) + 1);
                const dim_t q0 = std::max<dim_t>(0, cells_to((pp.clip_x0 - dx0) / z, pn.cols));
                const dim_t q1 =
                    std::min<dim_t>(pn.cols, cells_to((pp.clip_x1 - dx0) / z, pn.cols) + 1);
                // Fills first, then the tile's grid as one line per row and column boundary (a
                // rectangle per cell made a 64 x 64 kernel panel at 6 px cells cost 100 ms a
                // frame of vertex work in a software rasterizer), then what goes over them:
                // phase outlines, the current step's outline, the digits.
                for (dim_t r = r0; r < r1; ++r)
                    for (dim_t q = q0; q < q1; ++q) {
                        const dim_t c = linear_at(pn, txi, tyi, r, q);
                        const auto cu = static_cast<std::size_t>(c);
                        const float ax = dx0 + static_cast<float>(q) * z,
                                    ay = dy0 + static_cast<float>(r) * z;
                        out.rect(ax, ay, ax + z, ay + z, pp.cell_colour(c), 0);
                        if (!pn.padding_lane.empty() && pn.padding_lane[cu])
                            out.line(ax, ay, ax + z, ay + z, pp.grid);
                    }
                if (z >= 6 && r1 > r0 && q1 > q0) {
                    const float gx0 = dx0 + static_cast<float>(q0) * z,
                                gx1 = dx0 + static_cast<float>(q1) * z,
                                gy0 = dy0 + static_cast<float>(r0) * z,
                                gy1 = dy0 + static_cast<float>(r1) * z;
                    for (dim_t r = r0; r <= r1; ++r) {
                        const float y = dy0 + static_cast<float>(r) * z + 0.5f;
                        out.line(gx0, y, gx1, y, pp.grid);
                    }
                    for (dim_t q = q0; q <= q1; ++q) {
                        const float x = dx0 + static_cast<float>(q) * z + 0.5f;
                        out.line(x, gy0, x, gy1, pp.grid);
                    }
                }
                for (dim_t r = r0; r < r1; ++r)
                    for (dim_t q = q0; q < q1; ++q) {
                        const dim_t c = linear_at(pn, txi, tyi, r, q);
                        const auto cu = static_cast<std::size_t>(c);
                        const bool current = (ps.flags[cu] & kCurrent) != 0;
                        const bool grouped = !pn.group.empty() && z >= 6;
                        if (!current && !grouped && !text) continue;
                        const float ax = dx0 + static_cast<float>(q) * z,
                                    ay = dy0 + static_cast<float>(r) * z;
                        const float bx = ax + z, by = ay + z;
                        if (grouped) {
                            // Inside the cell, under its digits: the value stays readable.
                            const float g = pp.group_width, h = g * 0.5f + 1.0f;
                            out.rect(ax + h, ay + h, bx - h, by - h, 0,
                                     pp.group_colour(pn.group[cu]), g);
                        }
                        if (current)
                            out.rect(ax, ay, bx, by, 0, pp.current, std::max(1.5f, z * 0.08f));
                        if (!text) continue;
                        const Rgba tc = luminance(pp.cell_colour(c)) > 0.5f ? kBlack : kWhite;
                        std::string v = pp.cell_text(c);
                        if (!v.empty())
                            out.text(ax, ay + (z - fsz) * 0.5f, fsz, tc, std::move(v), bx);
                        if (!ps.count.empty() && z >= 34.0f) {
                            const float cs = std::max(9.0f, z * 0.26f);
                            out.text(ax + 2, by - cs - 1, cs, tc,
                                     "x" + std::to_string(ps.count[cu]));
                        }
                    }
            }
        }
        // Padding cells read by the current step (im2col's zeros).
        for (const CellPos& cp : ps.current_pads) {
            const float ax = px + static_cast<float>(cp.x) * z,
                        ay = py + static_cast<float>(cp.y) * z;
            out.rect(ax, ay, ax + z, ay + z, pp.current_pad, pp.current, std::max(1.5f, z * 0.08f));
            if (text) out.text(ax + z * 0.35f, ay + z * 0.3f, fsz * 0.8f, pp.value_text, "0");
        }
    }
    // Hovered / pinned cell outline.
    for (const CellPos& cp : pp.outlined) {
        const float ax = pp.ox + static_cast<float>(cp.x) * z,
                    ay = pp.oy + static_cast<float>(cp.y) * z;
        out.rect(ax - 1, ay - 1, ax + z + 1, ay + z + 1, 0, pp.hovered, 3.0f);
    }
}

namespace {

// Where the UTF-8 characters of t start, and its end.
std::vector<std::size_t> char_starts(const std::string& t) {
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i < t.size(); ++i)
        if ((static_cast<unsigned char>(t[i]) & 0xc0u) != 0x80u) at.push_back(i);
    at.push_back(t.size());
    return at;
}

// The longest start of t (whole characters) no wider than `width`; at least one character where
// `one` (a line holds at least one, as ImGui's).
std::size_t fitting_prefix(const std::string& t, float width, float size, const TextWidth& measure,
                           bool one) {
    const std::vector<std::size_t> at = char_starts(t);
    std::size_t lo = 0, hi = at.size() - 1;  // characters: lo fit, more than hi do not
    while (lo < hi) {
        const std::size_t mid = (lo + hi + 1) / 2;
        if (measure(t.substr(0, at[mid]), size) <= width)
            lo = mid;
        else
            hi = mid - 1;
    }
    return at[one ? std::max<std::size_t>(lo, std::min<std::size_t>(1, at.size() - 1)) : lo];
}

}  // namespace

std::string cut_to_width(const std::string& t, float width, float size, const TextWidth& measure) {
    if (measure(t, size) <= width) return t;
    return t.substr(0, fitting_prefix(t, width - measure("...", size), size, measure, false)) +
           "...";
}

std::vector<std::string> wrap_to_width(const std::string& t, float width, float size,
                                       const TextWidth& measure) {
    std::vector<std::string> lines;
    const float space = measure(" ", size);
    std::string line;
    float lw = 0;  // the line's width: its words' and spaces' (the fonts have no kerning)
    const auto push = [&] {
        while (!line.empty() && line.back() == ' ') line.pop_back();
        lines.push_back(std::move(line));
        line.clear();
        lw = 0;
    };
    // A word starting a line: as much of it as fits, the rest on the next lines.
    const auto start = [&](std::string word, float ww) {
        while (ww > width) {
            const std::size_t n = fitting_prefix(word, width, size, measure, true);
            if (n >= word.size()) break;
            line = word.substr(0, n);
            push();
            word.erase(0, n);
            ww = measure(word, size);
        }
        line = std::move(word);
        lw = ww;
    };
    for (std::size_t i = 0; i <= t.size();) {
        const std::size_t j = std::min(t.find(' ', i), t.size());
        std::string word = t.substr(i, j - i);
        i = j + 1;
        const float ww = measure(word, size);
        if (line.empty()) {
            if (!word.empty()) start(std::move(word), ww);
            continue;  // (a line's leading spaces dropped)
        }
        if (!word.empty() && lw + space + ww > width) {
            push();
            start(std::move(word), ww);
        } else {
            line += ' ' + word;
            lw += space + ww;
        }
    }
    if (!line.empty() || lines.empty()) push();
    return lines;
}

std::string role_text(const Panel& p) {
    std::string rows, cols, tx, ty;
    for (std::size_t i = 0; i < p.roles.size(); ++i) {
        std::string* t = p.roles[i] == Role::Row     ? &rows
                         : p.roles[i] == Role::Col   ? &cols
                         : p.roles[i] == Role::TileX ? &tx
                                                     : &ty;
        *t += (t->empty() ? "" : ",") + p.shape.names[i];
    }
    std::string s;
    if (!rows.empty()) s += "rows " + rows + " · ";
    if (!cols.empty()) s += "cols " + cols;
    if (!tx.empty() && p.tiles_x > 1) s += " · tiles " + tx + " →";
    if (!ty.empty() && p.tiles_y > 1) s += " · " + ty + " ↓";
    return s;
}

std::string shape_text(const Shape& s) {
    std::string r = "(";
    for (std::size_t i = 0; i < s.dims.size(); ++i)
        r += (i ? ", " : "") + s.names[i] + "=" + std::to_string(s.dims[i]);
    return r + ")";
}

float title_wrap(const Panel& pn, float z, const TitlePaint& tp) {
    const float x = static_cast<float>(pn.x) * z;
    return std::max(std::min(static_cast<float>(pn.slot_width) * z - tp.size * 0.6f, tp.right - x),
                    tp.size * 8);
}

TitleText title_text(const Panel& pn, float z, const TitlePaint& tp) {
    TitleText t;
    const float wrap = title_wrap(pn, z, tp);
    if (tp.compact) {
        t.lines.push_back(
            cut_to_width(pn.name + "  " + short_title(pn.title), wrap, tp.size, tp.text_width));
    } else {
        for (const std::string& para :
             {pn.name + "  " + pn.title, shape_text(pn.shape), role_text(pn)})
            for (std::string& l : wrap_to_width(para, wrap, tp.size, tp.text_width))
                t.lines.push_back(std::move(l));
    }
    for (const std::string& l : t.lines) t.w = std::max(t.w, tp.text_width(l, tp.size));
    t.h = static_cast<float>(t.lines.size()) * tp.size;
    return t;
}

float title_slot(const ViewModel& v, float size, float canvas_w) {
    int per_row = 0, in_row = 0;
    for (std::size_t i : placement(v)) {
        in_row = v.panels[i].new_row ? 1 : in_row + 1;
        per_row = std::max(per_row, in_row);
    }
    return std::min(size * static_cast<float>(kTitleSlotChars),
                    canvas_w / static_cast<float>(std::max(1, per_row)));
}

float layout_titled(ViewModel& v, float z, const TitlePaint& tp, float min_slot) {
    // The slots first (a title wraps at its slot), then the rows apart by their titles.
    const double slot = min_slot / z;
    layout_view(v, 0, slot);
    std::vector<double> room(v.panels.size());
    float top = 0;
    for (std::size_t i = 0; i < v.panels.size(); ++i) {
        const Panel& pn = v.panels[i];
        // The tile labels ("c=1", PanelPaint::label_size over a gap) under a tiled panel's title.
        const float h =
            title_text(pn, z, tp).h + (pn.tiles_x * pn.tiles_y > 1 ? 1.3f : 0.3f) * tp.size;
        room[i] = h / z;
        top = std::max(top, h);
    }
    // One-line titles (a short window): rows half a line apart, not 2 cells (54 px of lesson
    // 17's 332 at 1280x720 in presenter mode).
    const double gap = tp.compact ? std::min(kPanelGap * 0.5, 0.5 * tp.size / z) : kPanelGap * 0.5;
    layout_view(v, top / z, slot, gap, &room);
    return top;
}

void paint_title(const TitleText& t, float x, float y, const TitlePaint& tp, bool pinned,
                 std::vector<DrawPrim>& list) {
    Out out{list};
    if (pinned && tp.backdrop) out.rect(x - 2, y, x + t.w + 4, y + t.h + 2, tp.backdrop, 0);
    for (std::size_t k = 0; k < t.lines.size(); ++k)
        out.text(x, y + static_cast<float>(k) * tp.size, tp.size, tp.text, t.lines[k]);
}

PrimCounts count_prims(const std::vector<DrawPrim>& prims) {
    PrimCounts c;
    for (const DrawPrim& p : prims) switch (p.kind) {
            case DrawPrim::Kind::Rect:
                ++c.rects;
                break;
            case DrawPrim::Kind::Line:
                ++c.lines;
                break;
            case DrawPrim::Kind::Text:
                ++c.texts;
                break;
            case DrawPrim::Kind::Image:
                ++c.images;
                break;
            case DrawPrim::Kind::Circle:
                ++c.circles;
                break;
        }
    return c;
}

std::string counts_text(const PrimCounts& c) {
    return std::to_string(c.rects) + " rects, " + std::to_string(c.lines) + " lines, " +
           std::to_string(c.texts) + " texts, " + std::to_string(c.images) + " images" +
           (c.circles ? ", " + std::to_string(c.circles) + " circles" : std::string());
}

namespace {

// A primitive's text size is ImGui's, the font's line (ascent to descent, stb_truetype's
// ScaleForPixelHeight); an SVG font-size is the em, 2048 / 2384 of DejaVu Sans's line. Written
// as the size itself, the file's text came out 16% wider than the window's and ran into the
// next panel's title.
constexpr float kEmOfLine = 2048.0f / 2384.0f;

// "#rrggbb", and the opacity where the colour is not opaque.
std::string paint(const char* what, Rgba c) {
    if (c == 0) return std::string(" ") + what + "=\"none\"";
    char b[64];
    std::snprintf(b, sizeof b, " %s=\"#%02x%02x%02x\"", what, c & 0xff, (c >> 8) & 0xff,
                  (c >> 16) & 0xff);
    std::string s = b;
    if ((c >> 24) != 0xff) {
        std::snprintf(b, sizeof b, " %s-opacity=\"%.3g\"", what,
                      static_cast<double>(c >> 24) / 255.0);
        s += b;
    }
    return s;
}

}  // namespace

void write_svg(std::ostream& o, const std::vector<DrawPrim>& prims) {
    for (const DrawPrim& p : prims) {
        switch (p.kind) {
            case DrawPrim::Kind::Rect:
                o << "<rect x=\"" << p.x0 << "\" y=\"" << p.y0 << "\" width=\"" << p.x1 - p.x0
                  << "\" height=\"" << p.y1 - p.y0 << "\"" << paint("fill", p.fill)
                  << paint("stroke", p.stroke);
                if (p.stroke) o << " stroke-width=\"" << p.width << "\"";
                o << "/>";
                break;
            case DrawPrim::Kind::Line:
                o << "<line x1=\"" << p.x0 << "\" y1=\"" << p.y0 << "\" x2=\"" << p.x1 << "\" y2=\""
                  << p.y1 << "\"" << paint("stroke", p.stroke) << " stroke-width=\"" << p.width
                  << "\"";
                if (p.dash > 0) o << " stroke-dasharray=\"" << p.dash << " " << p.gap << "\"";
                o << "/>";
                break;
            case DrawPrim::Kind::Circle:
                o << "<circle cx=\"" << p.x0 << "\" cy=\"" << p.y0 << "\" r=\"" << p.size << "\""
                  << paint("fill", p.fill) << paint("stroke", p.stroke);
                if (p.stroke) o << " stroke-width=\"" << p.width << "\"";
                o << "/>";
                break;
            case DrawPrim::Kind::Text:
                o << "<text x=\"" << (p.centred ? 0.5f * (p.x0 + p.x1) : p.x0) << "\" y=\""
                  << p.y0 + 0.8f * p.size << "\" font-size=\"" << p.size * kEmOfLine << "\""
                  << (p.centred ? " text-anchor=\"middle\"" : "")
                  << (p.bold ? " font-weight=\"bold\"" : "") << paint("fill", p.stroke);
                if (p.angle != 0)
                    o << " transform=\"rotate(" << p.angle * 57.29578f << " " << p.x0 << " " << p.y0
                      << ")\"";
                o << ">" << xml_escape(p.text) << "</text>";
                break;
            case DrawPrim::Kind::Image:
                o << "<rect x=\"" << p.x0 << "\" y=\"" << p.y0 << "\" width=\"" << p.x1 - p.x0
                  << "\" height=\"" << p.y1 - p.y0 << "\" fill=\"none\"/>";
                break;
        }
        o << "\n";
    }
}

}  // namespace convlab::app
