// One panel drawn on the canvas: its title, cells, values, padding and outlines.
#include "gui/app.hpp"

namespace convlab::ui {

// "tiles: c ->, n v; rows h; cols w" for a panel.
std::string role_text(const Panel& p) {
    std::string rows, cols, tx, ty;
    for (std::size_t i = 0; i < p.roles.size(); ++i) {
        std::string* t = p.roles[i] == app::Role::Row     ? &rows
                         : p.roles[i] == app::Role::Col   ? &cols
                         : p.roles[i] == app::Role::TileX ? &tx
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

// The least size (px) a tile label is shrunk to so that every tile of a row gets its label ("k=1"
// over each kernel, not over every other one); below it, every other tile is labelled.
constexpr float kMinLabelPx = 11.0f;

void App::draw_panel(ImDrawList* dl, std::size_t i, ImVec2 origin, float z, const ImVec4& clip) {
    const Palette& P = pal();
    const Panel& pn = view->panels[i];
    const app::PanelState& ps = st.panels[i];
    const float px = origin.x + static_cast<float>(pn.x) * z;
    const float py = origin.y + static_cast<float>(pn.y) * z;
    const float pw = static_cast<float>(pn.width) * z, ph = static_cast<float>(pn.height) * z;
    if (px > clip.z || py > clip.w || px + pw < clip.x || py + ph < clip.y) return;
    const float tw = static_cast<float>(pn.pad_left + pn.cols + pn.pad_right);
    const float th = static_cast<float>(pn.pad_top + pn.rows + pn.pad_bottom);
    const dim_t per_row =
        pn.tiles_per_row > 0 ? std::min(pn.tiles_per_row, pn.tiles_x) : pn.tiles_x;
    const dim_t wraps = (pn.tiles_x + per_row - 1) / per_row;
    // Tile labels: shrunk (to kMinLabelPx at the least) where that labels every tile of a row.
    float label_size = ImGui::GetFontSize() * 0.85f;
    if (z < 3.0f) {
        texture(i);
        if (tex[i].id) {
            dl->AddImage(reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(tex[i].id)),
                         ImVec2(px, py),
                         ImVec2(px + static_cast<float>(tex[i].w) * z,
                                py + static_cast<float>(tex[i].h) * z));
        }
        dl->AddRect(ImVec2(px - 1, py - 1), ImVec2(px + pw + 1, py + ph + 1), P.grid);
    } else {
        // One digit size for every cell (app::value_text_px): a value too wide for its cell is
        // written shorter (fewer digits, then the scientific form) or not at all, never cut.
        const float fsz = value_font(i, z);
        const bool text = fsz > 0.0f;
        // Tile label: the tile dims of its first element ("c=1", "n=0 g=1").
        // With across_only, only the dims that change along a row of tiles (TileX: "c=1" where
        // the first tile of the row says "k=0 c=0"), where the panel has any.
        bool any_across = false;
        for (std::size_t d = 0; d < pn.roles.size(); ++d)
            any_across |= pn.roles[d] == app::Role::TileX && pn.shape.dims[d] > 1;
        const auto tile_label = [&](dim_t txi, dim_t tyi, bool across_only) {
            const auto first = app::linear_at(pn, txi, tyi, 0, 0);
            std::vector<dim_t> c(pn.shape.dims.size());
            pn.shape.coord_of(first, c);
            std::string lab;
            for (std::size_t d = 0; d < c.size(); ++d)
                if ((pn.roles[d] == app::Role::TileX ||
                     (pn.roles[d] == app::Role::TileY && !(across_only && any_across))) &&
                    pn.shape.dims[d] > 1)
                    lab +=
                        (lab.empty() ? "" : " ") + pn.shape.names[d] + "=" + std::to_string(c[d]);
            return lab;
        };
        const auto label_w = [&](const std::string& lab) {
            return font->CalcTextSizeA(label_size, FLT_MAX, 0, lab.c_str()).x + label_size * 0.5f;
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
            if (across > pitch && label_size > kMinLabelPx) {
                label_size = std::max(kMinLabelPx, label_size * pitch / across);
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
            if (ty0 > clip.w || ty0 + th * z < clip.y) continue;
            for (dim_t sc = 0; sc < per_row; ++sc) {
                const float tx0 = px + static_cast<float>(sc) * (tw + 1.0f) * z;
                if (tx0 > clip.z || tx0 + tw * z < clip.x) continue;
                const dim_t tyi = sr / wraps, txi = (sr % wraps) * per_row + sc;
                if (txi >= pn.tiles_x) continue;
                // Above the tile, clear of a lesson's outline of its first row (lesson 17's
                // "c=0" was crossed by it).
                const float lift = highlight_thickness(z) + 1.0f;
                if (pn.tiles_x * pn.tiles_y > 1 && (z >= label_size + lift || sr == 0) &&
                    sc % label_every == 0) {
                    const std::string lab = tile_label(txi, tyi, sc > 0 || !full_first);
                    dl->AddText(font, label_size, ImVec2(tx0, ty0 - label_size - lift), P.dim_text,
                                lab.c_str());
                }
                // A row of tiles whose label (its TileY dims: "k=1") has no room above it goes
                // left of its first tile, in the gap between panels, where it fits there.
                if (sc == 0 && sr % wraps == 0 && pn.tiles_y > 1 &&
                    (sr > 0 ? z < label_size + lift : !full_first)) {
                    std::vector<dim_t> c(pn.shape.dims.size());
                    pn.shape.coord_of(app::linear_at(pn, txi, tyi, 0, 0), c);
                    std::string rl;
                    for (std::size_t d = 0; d < c.size(); ++d)
                        if (pn.roles[d] == app::Role::TileY && pn.shape.dims[d] > 1)
                            rl += (rl.empty() ? "" : " ") + pn.shape.names[d] + "=" +
                                  std::to_string(c[d]);
                    const float room = static_cast<float>(app::kPanelGap) * z * 0.9f;
                    float rs = label_size;
                    float w = font->CalcTextSizeA(rs, FLT_MAX, 0, rl.c_str()).x;
                    if (w * 1.15f > room && rs > kMinLabelPx) {
                        rs = std::max(kMinLabelPx, rs * room / (w * 1.15f));
                        w = font->CalcTextSizeA(rs, FLT_MAX, 0, rl.c_str()).x;
                    }
                    if (!rl.empty() && w * 1.15f <= room)
                        dl->AddText(font, rs, ImVec2(tx0 - w * 1.15f, ty0 + (th * z - rs) * 0.5f),
                                    P.dim_text, rl.c_str());
                }
                // Padding border (zeros).
                if (pn.pad_top + pn.pad_bottom + pn.pad_left + pn.pad_right > 0) {
                    for (dim_t r = 0; r < static_cast<dim_t>(th); ++r)
                        for (dim_t q = 0; q < static_cast<dim_t>(tw); ++q) {
                            if (r >= pn.pad_top && r < pn.pad_top + pn.rows && q >= pn.pad_left &&
                                q < pn.pad_left + pn.cols)
                                continue;
                            const ImVec2 a(tx0 + static_cast<float>(q) * z,
                                           ty0 + static_cast<float>(r) * z);
                            const ImVec2 b(a.x + z, a.y + z);
                            dl->AddRectFilled(a, b, P.padding);
                            dl->AddLine(a, b, P.grid);
                            if (z >= 6) dl->AddRect(a, b, P.grid);
                            if (text)
                                dl->AddText(font, fsz * 0.8f,
                                            ImVec2(a.x + z * 0.35f, a.y + z * 0.3f), P.dim_text,
                                            "0");
                        }
                }
                // Visible data cells of the tile.
                const float dx0 = tx0 + static_cast<float>(pn.pad_left) * z;
                const float dy0 = ty0 + static_cast<float>(pn.pad_top) * z;
                const dim_t r0 = std::max<dim_t>(0, static_cast<dim_t>((clip.y - dy0) / z));
                const dim_t r1 =
                    std::min<dim_t>(pn.rows, static_cast<dim_t>((clip.w - dy0) / z) + 1);
                const dim_t q0 = std::max<dim_t>(0, static_cast<dim_t>((clip.x - dx0) / z));
                const dim_t q1 =
                    std::min<dim_t>(pn.cols, static_cast<dim_t>((clip.z - dx0) / z) + 1);
                // Fills first, then the tile's grid as one line per row and column boundary (a
                // rectangle per cell made a 64 x 64 kernel panel at 6 px cells cost 100 ms a
                // frame of vertex work in a software rasterizer), then what goes over them:
                // phase outlines, the current step's outline, the digits.
                for (dim_t r = r0; r < r1; ++r)
                    for (dim_t q = q0; q < q1; ++q) {
                        const dim_t c = app::linear_at(pn, txi, tyi, r, q);
                        const auto cu = static_cast<std::size_t>(c);
                        const ImVec2 a(dx0 + static_cast<float>(q) * z,
                                       dy0 + static_cast<float>(r) * z);
                        const ImVec2 b(a.x + z, a.y + z);
                        dl->AddRectFilled(a, b, cell_colour(i, c));
                        if (!pn.padding_lane.empty() && pn.padding_lane[cu])
                            dl->AddLine(a, b, P.grid);
                    }
                if (z >= 6 && r1 > r0 && q1 > q0) {
                    const float gx0 = dx0 + static_cast<float>(q0) * z,
                                gx1 = dx0 + static_cast<float>(q1) * z,
                                gy0 = dy0 + static_cast<float>(r0) * z,
                                gy1 = dy0 + static_cast<float>(r1) * z;
                    for (dim_t r = r0; r <= r1; ++r) {
                        const float y = dy0 + static_cast<float>(r) * z + 0.5f;
                        dl->AddLine(ImVec2(gx0, y), ImVec2(gx1, y), P.grid);
                    }
                    for (dim_t q = q0; q <= q1; ++q) {
                        const float x = dx0 + static_cast<float>(q) * z + 0.5f;
                        dl->AddLine(ImVec2(x, gy0), ImVec2(x, gy1), P.grid);
                    }
                }
                for (dim_t r = r0; r < r1; ++r)
                    for (dim_t q = q0; q < q1; ++q) {
                        const dim_t c = app::linear_at(pn, txi, tyi, r, q);
                        const auto cu = static_cast<std::size_t>(c);
                        const bool current = (ps.flags[cu] & app::kCurrent) != 0;
                        const bool grouped = !pn.group.empty() && z >= 6;
                        if (!current && !grouped && !text) continue;
                        const ImVec2 a(dx0 + static_cast<float>(q) * z,
                                       dy0 + static_cast<float>(r) * z);
                        const ImVec2 b(a.x + z, a.y + z);
                        if (grouped) {
                            // Inside the cell, under its digits: the value stays readable.
                            const float g = group_outline_px(z), h = g * 0.5f + 1.0f;
                            dl->AddRect(ImVec2(a.x + h, a.y + h), ImVec2(b.x - h, b.y - h),
                                        group_colour(pn.group[cu]), 0, 0, g);
                        }
                        if (current) dl->AddRect(a, b, P.current, 0, 0, std::max(1.5f, z * 0.08f));
                        if (!text) continue;
                        const ImU32 col = cell_colour(i, c);
                        const ImU32 tc = luminance(col) > 0.5f ? IM_COL32(0, 0, 0, 255)
                                                               : IM_COL32(255, 255, 255, 255);
                        const std::string v = value_text(i, c, z);
                        if (!v.empty()) {
                            const ImVec2 ts = font->CalcTextSizeA(fsz, FLT_MAX, 0, v.c_str());
                            dl->AddText(font, fsz,
                                        ImVec2(a.x + (z - ts.x) * 0.5f, a.y + (z - ts.y) * 0.5f),
                                        tc, v.c_str());
                        }
                        if (!ps.count.empty() && z >= 34.0f) {
                            const std::string cnt = "x" + std::to_string(ps.count[cu]);
                            const float cs = std::max(9.0f, z * 0.26f);
                            dl->AddText(font, cs, ImVec2(a.x + 2, b.y - cs - 1), tc, cnt.c_str());
                        }
                    }
            }
        }
        // Padding cells read by the current step (im2col's zeros).
        for (const CellPos& cp : ps.current_pads) {
            const ImVec2 a(px + static_cast<float>(cp.x) * z, py + static_cast<float>(cp.y) * z);
            dl->AddRectFilled(a, ImVec2(a.x + z, a.y + z), c_current_pad);
            dl->AddRect(a, ImVec2(a.x + z, a.y + z), P.current, 0, 0, std::max(1.5f, z * 0.08f));
            if (text)
                dl->AddText(font, fsz * 0.8f, ImVec2(a.x + z * 0.35f, a.y + z * 0.3f), P.value_text,
                            "0");
        }
    }
    // Hovered / pinned cell outline.
    for (const app::Selection* sel : {&s.hover, &s.pinned}) {
        if (!sel->valid() || sel->panel != static_cast<int>(i)) continue;
        const CellPos cp = app::cell_pos(pn, sel->cell);
        const ImVec2 a(origin.x + static_cast<float>(cp.x) * z,
                       origin.y + static_cast<float>(cp.y) * z);
        dl->AddRect(ImVec2(a.x - 1, a.y - 1), ImVec2(a.x + z + 1, a.y + z + 1), P.hovered, 0, 0,
                    3.0f);
    }
}

}  // namespace convlab::ui
