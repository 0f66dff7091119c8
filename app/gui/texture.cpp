// A panel's texture: a texel per cell and its box-filtered halvings, redrawn where the
// step changed cells.
#include "gui/app.hpp"

namespace convlab::ui {

namespace {

// Texel (x, y) of the level below `lower` (lw x lh): the alpha-weighted box filter of its 2 x 2
// texels there (the transparent gaps between tiles do not darken the cells next to them).
std::uint32_t halve_at(const std::vector<std::uint32_t>& lower, int lw, int lh, int x, int y) {
    unsigned sum[4] = {0, 0, 0, 0};
    for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx) {
            const int sx = std::min(lw - 1, 2 * x + dx), sy = std::min(lh - 1, 2 * y + dy);
            const std::uint32_t c =
                lower[static_cast<std::size_t>(sy) * static_cast<std::size_t>(lw) +
                      static_cast<std::size_t>(sx)];
            const unsigned a = c >> 24;
            for (int k = 0; k < 3; ++k) sum[k] += ((c >> (8 * k)) & 0xffu) * a;
            sum[3] += a;
        }
    if (sum[3] == 0) return 0;
    std::uint32_t out = (sum[3] / 4) << 24;
    for (int k = 0; k < 3; ++k) out |= (sum[k] / sum[3]) << (8 * k);
    return out;
}

}  // namespace

void App::texture(std::size_t i) {
    PanelTexture& t = tex[i];
    const Panel& pn = view->panels[i];
    const int want_w = static_cast<int>(std::ceil(pn.width)),
              want_h = static_cast<int>(std::ceil(pn.height));
    if (t.texel.empty() || t.w != want_w || t.h != want_h || t.per_row != pn.tiles_per_row) {
        // (Re)placed: the panel's arrangement decides where each cell's texel is.
        if (t.id) glDeleteTextures(1, &t.id);
        t = PanelTexture{};
        t.w = want_w;
        t.h = want_h;
        t.per_row = pn.tiles_per_row;
        GLint max_size = 0;
        glGetIntegerv(GL_MAX_TEXTURE_SIZE, &max_size);
        if (t.w <= 0 || t.h <= 0 || t.w > max_size || t.h > max_size) return;
        t.texel = app::cell_texels(pn, t.w);
        glGenTextures(1, &t.id);
        glBindTexture(GL_TEXTURE_2D, t.id);
        // Minified through mipmaps (below): a plain linear filter samples 2 x 2 of many
        // texels per pixel and speckles.
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR_MIPMAP_LINEAR);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
        t.dirty = true;
    }
    if (!t.id || (!t.dirty && t.changed.empty())) return;
    glBindTexture(GL_TEXTURE_2D, t.id);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    if (t.dirty) {
        // Gaps between tiles stay transparent (0); every cell's texel is rewritten, then every
        // level below it. The levels are kept from one redraw to the next (a step's redraw of a
        // panel of millions of cells took a fresh, zeroed allocation of each level before): the
        // gaps never change.
        const std::size_t texels = static_cast<std::size_t>(t.w) * static_cast<std::size_t>(t.h);
        if (t.levels.empty() || t.levels[0].size() != texels) {
            t.levels.assign(1, std::vector<std::uint32_t>(texels, 0));
            t.level_size.assign(1, {t.w, t.h});
        }
        const dim_t numel = pn.numel();
        for (dim_t c = 0; c < numel; ++c)
            t.levels[0][t.texel[static_cast<std::size_t>(c)]] = cell_colour(i, c);
        for (std::size_t lv = 1;; ++lv) {
            const auto [w, h] = t.level_size[lv - 1];
            if (w == 1 && h == 1) break;
            const int nw = std::max(1, w / 2), nh = std::max(1, h / 2);
            if (t.levels.size() <= lv) {
                t.levels.emplace_back(static_cast<std::size_t>(nw) * static_cast<std::size_t>(nh));
                t.level_size.emplace_back(nw, nh);
            }
            std::vector<std::uint32_t>& next = t.levels[lv];
            const std::vector<std::uint32_t>& lower = t.levels[lv - 1];
            for (int y = 0; y < nh; ++y)
                for (int x = 0; x < nw; ++x)
                    next[static_cast<std::size_t>(y) * static_cast<std::size_t>(nw) +
                         static_cast<std::size_t>(x)] = halve_at(lower, w, h, x, y);
        }
        // Into the storage of the first upload where there is one (no reallocation).
        for (std::size_t lv = 0; lv < t.levels.size(); ++lv)
            if (t.uploaded)
                glTexSubImage2D(GL_TEXTURE_2D, static_cast<GLint>(lv), 0, 0, t.level_size[lv].first,
                                t.level_size[lv].second, GL_RGBA, GL_UNSIGNED_BYTE,
                                t.levels[lv].data());
            else
                glTexImage2D(GL_TEXTURE_2D, static_cast<GLint>(lv), GL_RGBA, t.level_size[lv].first,
                             t.level_size[lv].second, 0, GL_RGBA, GL_UNSIGNED_BYTE,
                             t.levels[lv].data());
        t.uploaded = true;
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAX_LEVEL,
                        static_cast<GLint>(t.levels.size()) - 1);
        t.dirty = false;
        t.changed.clear();
        return;
    }
    // A step's change: the changed cells' texels, then their parents level by level, each
    // row's changed span uploaded on its own (a step's cells lie in a few rows). Each texel is
    // listed once by its mark, not by sorting the lists (a step of the stride view on a
    // ResNet-50 layer changes tens of thousands of cells, and sorting their texels at every
    // level took a tenth of a frame).
    const std::size_t texels = t.levels[0].size();
    if (t.mark.size() != texels) t.mark.assign(texels, 0);
    if (t.row_lo.size() != static_cast<std::size_t>(t.h)) {
        t.row_lo.assign(static_cast<std::size_t>(t.h), ~0u);
        t.row_hi.assign(static_cast<std::size_t>(t.h), 0);
    }
    t.at.clear();
    for (const dim_t c : t.changed) {
        const std::uint32_t k = t.texel[static_cast<std::size_t>(c)];
        t.levels[0][k] = cell_colour(i, c);
        if (t.mark[k]) continue;
        t.mark[k] = 1;
        t.at.push_back(k);
    }
    t.changed.clear();
    for (std::size_t lv = 0;; ++lv) {
        const auto w = static_cast<std::uint32_t>(t.level_size[lv].first);
        t.rows.clear();
        for (const std::uint32_t k : t.at) {
            t.mark[k] = 0;
            const std::uint32_t row = k / w, x = k % w;
            if (t.row_lo[row] == ~0u) {
                t.rows.push_back(row);
                t.row_lo[row] = t.row_hi[row] = x;
            } else {
                t.row_lo[row] = std::min(t.row_lo[row], x);
                t.row_hi[row] = std::max(t.row_hi[row], x);
            }
        }
        for (const std::uint32_t row : t.rows) {
            const std::uint32_t x0 = t.row_lo[row], x1 = t.row_hi[row];
            glTexSubImage2D(GL_TEXTURE_2D, static_cast<GLint>(lv), static_cast<GLint>(x0),
                            static_cast<GLint>(row), static_cast<GLsizei>(x1 - x0 + 1), 1, GL_RGBA,
                            GL_UNSIGNED_BYTE,
                            t.levels[lv].data() + static_cast<std::size_t>(row) * w + x0);
            t.row_lo[row] = ~0u;
        }
        if (lv + 1 >= t.levels.size()) break;
        const auto [nw, nh] = t.level_size[lv + 1];
        const int h = t.level_size[lv].second;
        t.next.clear();
        for (const std::uint32_t k : t.at) {
            const int x = std::min(nw - 1, static_cast<int>(k % w) / 2),
                      y = std::min(nh - 1, static_cast<int>(k / w) / 2);
            const auto p = static_cast<std::uint32_t>(y * nw + x);
            if (t.mark[p]) continue;
            t.mark[p] = 1;
            t.next.push_back(p);
        }
        for (const std::uint32_t k : t.next)
            t.levels[lv + 1][k] = halve_at(t.levels[lv], static_cast<int>(w), h,
                                           static_cast<int>(k % static_cast<std::uint32_t>(nw)),
                                           static_cast<int>(k / static_cast<std::uint32_t>(nw)));
        std::swap(t.at, t.next);
    }
}

}  // namespace convlab::ui
