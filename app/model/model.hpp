// The app's state and view models, independent of any window (no imgui, no GLFW): what every
// panel shows at a step, which cells a hovered cell is linked to, where each cell sits on the
// canvas. The ImGui drawing (gui.cpp) and the SVG export only read these structs. Index:
//   [SECTION] panels: a tensor drawn as tiles of cells, and its geometry
//   [SECTION] links: engine IndexMaps between panels, enumerated once
//   [SECTION] relations: products (GEMM, convolution) between panels, for drivers and hover
//   [SECTION] view models: the panels, links and drivers of one view
//   [SECTION] playback: {step, speed, paused, loop}, advanced by dt * speed
//   [SECTION] step and hover state computed from a view model
//   [SECTION] app state
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "convlab/index_map.hpp"
#include "convlab/problem.hpp"

namespace convlab::lesson {
struct StepResult;  // lesson/lesson.hpp: a lesson step's named tensors (the tensors view)
}

namespace convlab::app {

// [SECTION] panels

// How a tensor dim is placed on the canvas. Several dims with one role form a mixed-radix index,
// the first one outermost: cell row = row index, cell column = col index inside a tile; tiles are
// placed left to right by their TileX index and top to bottom by their TileY index.
enum class Role : std::uint8_t { Row, Col, TileX, TileY };

// Default roles for a rank: last dim Col, second last Row, then TileX, TileY, TileX ... outwards.
std::vector<Role> default_roles(int rank);

struct Panel {
    std::string name;   // short tensor name: "X", "col", "dY" ...
    std::string title;  // what it is: "input", "column matrix B = im2col(X)"
    Shape shape;        // logical (or physical) dims and their names
    std::vector<Role> roles;
    std::vector<float> values;  // every element's final value (row-major over shape)
    // Padding drawn around each tile (cells), e.g. the input's zero padding in the im2col view.
    dim_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
    // Cells that are padding lanes (e.g. NC1HWC0 lanes c >= C): drawn hatched. Empty: none.
    std::vector<std::uint8_t> padding_lane;
    // Cells in groups drawn each with its own outline colour and named in the legend (the
    // stride phases of dX: the cells that use the same kernel taps): group[cell] indexes
    // group_names. Empty: none.
    std::vector<std::uint8_t> group;
    std::vector<std::string> group_names;
    dim_t tiles_per_row = 0;  // 0: all tiles of a TileY row side by side; else wrap
    bool new_row = false;     // starts a new row of panels on the canvas
    // The view's own row break (new_row as built, recorded by the first arrange_view): kept by
    // every arrangement, whatever breaks arrange_view adds for a canvas.
    bool own_row = false;
    // arrange_view chooses tiles_per_row (a long row of tiles wrapped into a near-square grid);
    // false: tiles_per_row is kept as set.
    bool auto_wrap = false;
    // A lesson step that reveals the view a picture at a time (its 'panels') leaves this one
    // blank: laid out in its place, not drawn, not hovered.
    bool hidden = false;
    // Filled in by layout():
    dim_t rows = 1, cols = 1, tiles_x = 1, tiles_y = 1;
    double x = 0, y = 0;  // top-left on the canvas, in cells
    double width = 0, height = 0;
    double slot_width = 0;  // room up to the next panel of its row (cells), for its title
    double title_room = 0;  // room above its row for the row's titles (cells)
    dim_t numel() const { return shape.numel(); }
};

// Cell geometry of a panel, in canvas cells. All in "cell units"; the GUI multiplies by zoom.
struct CellPos {
    double x = 0, y = 0;
};
constexpr double kTileGap = 1.0;   // between tiles of one panel
constexpr double kPanelGap = 4.0;  // between panels
// The least room of a panel's title, in characters of the canvas's font (fewer where a row has
// many panels); the gap between panels is at least one of them.
constexpr double kTitleSlotChars = 13.0;

// Fills rows/cols/tiles/width/height of a panel from its shape and roles.
void layout_panel(Panel& p);
// Top-left corner of element `linear` of panel p (layout_panel must have run).
CellPos cell_pos(const Panel& p, dim_t linear);
// Top-left of a padding cell: tile (tx, ty), padded row/col (0 = first padding row).
CellPos padded_pos(const Panel& p, dim_t tile_x, dim_t tile_y, dim_t prow, dim_t pcol);
// Tile index (tx, ty) and in-tile row/col of an element.
void cell_tile(const Panel& p, dim_t linear, dim_t& tx, dim_t& ty, dim_t& row, dim_t& col);
// Element at tile (tx, ty), in-tile row and col (inverse of cell_tile).
dim_t linear_at(const Panel& p, dim_t tx, dim_t ty, dim_t row, dim_t col);
// Display slot (column, row of tiles) of tile (tx, ty), and the slot grid extent.
void tile_slot(const Panel& p, dim_t tx, dim_t ty, dim_t& slot_col, dim_t& slot_row);
// Where every element of panel p lies in an image of the panel (a texel per cell, `width`
// texels a row, the panel's top-left at 0): y * width + x of cell_pos(p, e) - (p.x, p.y), for
// e in row-major order, in one pass over the elements (cell_pos per element took most of the
// first frame of a view of millions of cells).
std::vector<std::uint32_t> cell_texels(const Panel& p, int width);
// Element under canvas point (x, y) (cells), or -1.
dim_t hit_test(const Panel& p, double x, double y);

// [SECTION] links

// Memory for a table of `bytes`; from 4 MiB on in 2 MiB-aligned blocks the kernel is asked to
// back with huge pages (a view's tables of tens of megabytes otherwise took one page fault
// every 4 KiB, most of the time of building it on a virtual machine). Freed by free_table.
void* allocate_table(std::size_t bytes);
void free_table(void* p) noexcept;

// An allocator whose resize leaves new elements uninitialized (a link's tables of millions of
// entries are written in full right after, and zeroing them first cost as much again: the
// pages were touched twice), its memory from allocate_table.
template <class T>
struct UninitAlloc {
    using value_type = T;
    template <class U>
    struct rebind {
        using other = UninitAlloc<U>;
    };
    UninitAlloc() = default;
    template <class U>
    UninitAlloc(const UninitAlloc<U>&) noexcept {}
    T* allocate(std::size_t n) { return static_cast<T*>(allocate_table(n * sizeof(T))); }
    void deallocate(T* p, std::size_t) noexcept { free_table(p); }
    template <class U>
    bool operator==(const UninitAlloc<U>&) const noexcept {
        return true;
    }
    template <class U, class... A>
    void construct(U* p, A&&... a) {
        if constexpr (sizeof...(A) == 0)
            ::new (static_cast<void*>(p)) U;
        else
            ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
    }
};
// An index of a link's tables: 32 bits (a view holds at most kMaxViewCells, 24 Mi, cells), half
// the memory of dim_t for tables as large as the view.
using LinkIndex = std::int32_t;
using LinkTable = std::vector<LinkIndex, UninitAlloc<LinkIndex>>;

// An engine IndexMap between two panels, enumerated once (on the worker thread) so that a step or
// a hover never calls the map's std::function per frame.
struct Link {
    std::string name;
    int src = -1, dst = -1;  // panel indices
    std::shared_ptr<const IndexMap> map;
    dim_t elements = 0;  // domain elements (= element steps)
    // Element step e (the map's own enumeration order) processes domain element order[e];
    // step_of[d]: element step of domain element d. Both empty where the map enumerates its
    // domain in row-major order (most maps): the identity is not stored, as two tables of the
    // view's size (a ResNet-50 stem's TNCf has 12.8 Mi cells) took a tenth of a second to fill.
    LinkTable order, step_of;
    // image[d]: the map of d (-1 for none / zero).
    LinkTable image;
    // Inverse of image: for every codomain element, the domain elements that map to it.
    LinkTable inv_start, inv_items;
    dim_t line_len = 1;  // domain dims[line_axis]: element steps per Line step
    dim_t mid_len = 1;   // IndexMap::mid_extent(): lines per Tile block

    bool is_gather() const { return map->kind() == IndexMap::Kind::Gather; }
    // The domain element of element step e, and the element step of domain element d.
    dim_t element_at(dim_t e) const {
        return order.empty() ? e : order[static_cast<std::size_t>(e)];
    }
    dim_t step_at(dim_t d) const {
        return step_of.empty() ? d : step_of[static_cast<std::size_t>(d)];
    }
    dim_t num_steps(Granularity g) const;
    // Element steps [begin, end) of step `step` at granularity g (clamped).
    void step_range(Granularity g, dim_t step, dim_t& begin, dim_t& end) const;
    // Sources of destination element `dst_linear` (gather: at most one, reduce: all) and
    // destinations of a source element: the same answer as IndexMap::sources_of/destinations_of.
    std::vector<dim_t> sources_of(dim_t dst_linear) const;
    std::vector<dim_t> destinations_of(dim_t src_linear) const;
    // The same cells handed to f one at a time: a step of a large view follows tens of thousands
    // of cells, and a vector for each was an allocation each.
    template <class F>
    void for_sources(dim_t dst_linear, F&& f) const {
        for_cells(!is_gather(), dst_linear, f);
    }
    template <class F>
    void for_destinations(dim_t src_linear, F&& f) const {
        for_cells(is_gather(), src_linear, f);
    }

  private:
    // many: the cells of `at`'s list in the inverse tables; else its one image (if any).
    template <class F>
    void for_cells(bool many, dim_t at, F& f) const {
        const auto a = static_cast<std::size_t>(at);
        if (!many) {
            if (image[a] >= 0) f(static_cast<dim_t>(image[a]));
            return;
        }
        for (LinkIndex i = inv_start[a]; i < inv_start[a + 1]; ++i)
            f(static_cast<dim_t>(inv_items[static_cast<std::size_t>(i)]));
    }
};

// Enumerates `map` (progress in [0,1] written to *progress when given). Throws Error.
Link make_link(std::shared_ptr<const IndexMap> map, int src, int dst,
               std::atomic<float>* progress = nullptr);

// [SECTION] relations

// A product between panels (dX = conv(P, W'), B* = W^T dY, dW = dY B^T): for one cell of the
// result panel, the cells of each operand panel it reads. Evaluated for one cell at a time.
struct Relation {
    std::string name;  // "dX = conv(P, W')"
    int result = -1;
    std::vector<int> operands;
    // fn(result_linear, out): out[i] receives the cells of operands[i].
    std::function<void(dim_t, std::vector<std::vector<dim_t>>&)> fn;
};

// [SECTION] view models

// What drives the step: an index map (its domain elements in the map's order) or a relation
// (the result panel's elements in row-major order, a line = the last dim).
struct Driver {
    int link = -1;      // index into links, or
    int relation = -1;  // index into relations
};

struct ViewModel {
    std::string name;     // "im2col"
    std::string caption;  // one line shown above the canvas
    std::vector<Panel> panels;
    std::vector<Link> links;
    std::vector<Relation> relations;
    std::vector<Driver> drivers;  // all advance with the one step index
    // Formula with the numbers filled in for element `linear` of panel `panel` ("" when none).
    std::function<std::string(const ViewModel&, int panel, dim_t linear)> formula;
    // Padding cells of a panel read by a gather's kZero destination (im2col's padding): canvas
    // position of the padding cell that destination `dst_linear` of link `link` reads, if any.
    std::function<bool(const ViewModel&, int link, dim_t dst_linear, CellPos& pos)> zero_source;
    std::string check;             // "dX equals the engine's backward_data (direct): max |diff| 0"
    double width = 0, height = 0;  // canvas extent in cells (layout_view)
    // fixed_rows: arrange_view adds no row breaks inside the view's rows (the tensors view's
    // forward and gradient rows, whose columns pair a tensor with its gradient) but may cut all
    // of them into bands of the same columns, one band below the other; arranged: own_row
    // recorded.
    bool fixed_rows = false, arranged = false;
    // Cells between two panels of a row (their slot's least room beyond the cells). The tensors
    // view of a network's few small tensors takes less: at the default, lesson 17's gaps took a
    // third of a 1280x720 canvas's width and its cells stayed a quarter below the height's.
    double panel_gap = kPanelGap;
    // The panels' placement order (empty: as stored): a band's rows, then the next band's.
    std::vector<std::size_t> order;
};

// The indices of v's panels in placement order (v.order, or 0, 1, ...).
std::vector<std::size_t> placement(const ViewModel& v);

// Arranges the panels left to right in rows (layout_panel on each). title_cells: room above
// every row for the titles, or with titles (one per panel) above each row the most of its
// panels' (Panel::title_room); min_slot: least room per panel (both in cells, the GUI converts
// its pixel sizes at the current zoom); row_gap: cells between a row's cells and the next row's
// titles.
void layout_view(ViewModel& v, double title_cells = 0, double min_slot = 0,
                 double row_gap = kPanelGap * 0.5, const std::vector<double>* titles = nullptr);

// The canvas arrange_view plans for (pixels): the app's canvas at 1600 x 1000 beside the sidebar,
// the panel titles above every row of panels and the least slot a title gets (gui.cpp).
struct CanvasGuess {
    double width = 1180, height = 800;
    double title = 120;  // title block above each row of panels
    double slot = 220;   // least width of a panel's slot (its title wraps inside it)
    // false: the view's own row breaks (new_row as built) are lifted too, so its panels may go
    // in one row (the app's fit tries it where cells come out too small to read: two rows of
    // titles took most of a 1280x720 presenter canvas above the tnc view's cells).
    bool keep_rows = true;
};

// Zoom (pixels per cell) at which the view fits `c` with its current panels, tiles_per_row and
// new_row flags (layout_panel on each panel; clamped to [0.05, 64]).
double fit_zoom(ViewModel& v, const CanvasGuess& c = {});

// Chooses the arrangement of a built view so that it fills the canvas `c` (the app's fit calls
// it again for its real canvas and for fewest rows, and keeps the arrangement with the largest
// cells): for panels with auto_wrap, tiles_per_row (starting from the near-square grid of tiles; no
// grid more than 3 times taller than wide or 4 times wider than tall, no wrap only when the row of
// tiles is at most 2.5 times wider than tall), and extra rows of panels (the reading order and the
// new_row flags already set kept, unless c.keep_rows is false; within 5% of the best zoom, the
// fewest rows; a fixed_rows view's rows cut into bands instead), the combination with the
// largest fit_zoom. Calls layout_view.
void arrange_view(ViewModel& v, const CanvasGuess& c = {});

// The stride phases of backward data (implicit GEMM computes dX one phase at a time): the cells
// of dX whose spatial coordinates agree modulo the stride read the same kernel taps, those a
// with (i + p - a d) divisible by s on every axis. phase_of gives a dX cell's phase (index over
// the axes' residues i mod s, the first axis outermost); phase_names one line per phase, "h%2=1
// w%2=0: kh {0,2} kw {1} (2 taps)". No phases (an empty list) for stride 1 or more than
// kMaxPhases of them (too many colours to tell apart).
constexpr int kMaxPhases = 9;
std::vector<std::uint8_t> stride_phases(const Problem& p);  // per dX cell (act_shape order)
std::vector<std::string> phase_names(const Problem& p);
// The kernel taps (their offset along `axis`) that the phase with residue r on that axis reads.
std::vector<dim_t> phase_taps(const Problem& p, int axis, dim_t r);

// The view names (lesson::view_names(), the view registry lesson/views.hpp: im2col col2im
// stride fliprot fractal tnc weight_grad timings tensors winograd, then map:NAME per map).
const std::vector<std::string>& view_names();
bool is_placeholder_view(const std::string& name);  // timings (content comes later)
// Whether build_view has a builder for this view of the registry (tests: every one has).
bool has_view_builder(const std::string& name);

enum class DataKind { Integer, Real };
const char* data_kind_name(DataKind d);

struct ViewRequest {
    std::string view = "im2col";
    Problem problem;
    DataKind data = DataKind::Integer;
    dim_t c0 = 16;
    std::uint64_t seed = 1;
    // A lesson step's inputs (lesson_player.hpp): shown instead of generated data when the
    // sizes fit the problem (row-major, as the lesson's src / wei / diff_dst).
    std::vector<float> src, wei, diff_dst;
    // The tensors view: a lesson step's named tensors and which of them to show (empty: the
    // view's choice); null: the problem's own tensors (tensors_view.cpp).
    std::shared_ptr<const lesson::StepResult> tensors;
    std::vector<std::string> tensor_names;
    // The tensors view: the convolutions among those tensors (a network's conv layers; a
    // convolution step's own is found by its names), linked for the hover: a cell of dst,
    // diff_src or diff_wei lights the cells it was computed from, and its formula sums them.
    struct Conv {
        Problem problem;  // its batch that of its input
        std::string src, wei, dst, diff_src, diff_wei, diff_dst;
    };
    std::vector<Conv> convs;
    // Tensors a lesson step hides (predict, then reveal): no values in their panel titles.
    std::vector<std::string> hidden_tensors;
};

// Builds a view over the engine (tensors computed by the engine, maps enumerated). Throws Error
// for an unknown view, an invalid problem or a problem too large to show (the message says
// which). progress, when given, moves from 0 to 1.
ViewModel build_view(const ViewRequest& r, std::atomic<float>* progress = nullptr);
// The tensors view (tensors_view.cpp): one panel a named tensor, forward above backward.
ViewModel build_tensors_view(const ViewRequest& r);

// The terms of one element of a convolution's result as pairs of linear indices into its two
// operands, in the order of the sum: dst[n,k,o..] = sum X[n,c,o*s-p+t*d] W[k,c,t] (pairs (X, W)),
// diff_src[n,c,i..] = sum dY[n,k,o] W[k,c,t] over o*s-p+t*d = i (pairs (dY, W)), diff_wei[k,c,t..]
// = sum X[n,c,o*s-p+t*d] dY[n,k,o] (pairs (X, dY)). Padding taps are left out (they add 0).
enum class ConvResult { Dst, DiffSrc, DiffWei };
std::vector<std::pair<dim_t, dim_t>> conv_terms(const Problem& p, ConvResult kind, dim_t linear);

// [SECTION] playback

struct Playback {
    dim_t step = 0;
    double speed = 2.0;  // steps per second
    bool paused = true;
    bool loop = true;
    Granularity granularity = Granularity::Line;
    double time_left = 0;  // fraction of a step accumulated

    // Advances by dt seconds * speed when playing; returns true when the step changed.
    bool advance(double dt, dim_t num_steps);
    void step_forward(dim_t num_steps);
    void step_back(dim_t num_steps);
    void scrub(dim_t step, dim_t num_steps);
};

// Number of steps of a view at a granularity: the largest over its drivers.
dim_t num_steps(const ViewModel& v, Granularity g);

// [SECTION] step and hover state

enum CellFlag : std::uint8_t {
    kPending = 1,  // not yet written at this step (a driver's destination)
    kCurrent = 2,  // touched by the current step
    kDone = 4,     // a driver's source already consumed (reduce) / destination written
    kLinked = 8,   // linked to the hovered or pinned cell
    kHovered = 16,
    kHidden = 32,  // a lesson hides its value until revealed: drawn "?", shown is NaN
    // Marks advance_step uses while it runs and clears before it returns (a cell listed once
    // without sorting the lists): never set in a state it hands back.
    kListed = 64,   // already in the panel's list of changed cells
    kSummed = 128,  // a reduce destination already summed again
};

struct PanelState {
    std::vector<float> shown;           // value shown at this step
    std::vector<std::uint8_t> flags;    // CellFlag bits
    std::vector<std::int32_t> count;    // contributions received so far (reduce destinations)
    std::vector<CellPos> current_pads;  // padding cells read by the current step, relative
                                        // to the panel's top-left corner
};

struct StepState {
    dim_t step = 0;
    Granularity granularity = Granularity::Line;
    const ViewModel* model = nullptr;  // the view it was computed for
    std::vector<PanelState> panels;
    std::vector<std::vector<dim_t>> current;  // per panel: cells of the current step, sorted
};

// The state of every panel after steps [0, step] (the step's own cells flagged kCurrent).
StepState compute_step(const ViewModel& v, Granularity g, dim_t step);

// The text a hidden cell shows: "?" once its step has written it (a value to predict), nothing
// while it is still pending (as every pending cell).
inline const char* hidden_text(std::uint8_t flags) {
    return (flags & kPending) ? "" : "?";
}

// Hides cells (per panel, as highlight_cells gives them) for a class to predict: each gets
// kHidden and its shown value becomes NaN, so that nothing drawn from the state (text, colour,
// export) can give the value away.
void hide_cells(StepState& st, const std::vector<std::vector<dim_t>>& cells);
// True when the formula of cell `linear` of panel `panel` would show a hidden value: the cell
// itself or a cell linked to it (linked_cells) is hidden in st.
bool formula_hidden(const ViewModel& v, const StepState& st, int panel, dim_t linear);

// Brings `st` to step `step`. Where st holds a step of this same view at granularity g (and the
// view's drivers write distinct panels), only the cells whose state differs are updated, in
// time proportional to the steps between the two and the current cells rather than to the
// view's millions of cells: it then returns true with those cells per panel in `changed`
// (each once, in no particular order; the lists' memory is reused from the last call).
// Otherwise it computes the state afresh (compute_step) and returns false, every cell changed.
// Either way st equals compute_step(v, g, step).
bool advance_step(const ViewModel& v, StepState& st, Granularity g, dim_t step,
                  std::vector<std::vector<dim_t>>& changed);

// Cells linked to cell `linear` of panel `panel`: through links (both directions) and relations,
// followed transitively from panel to panel (each panel reached once). Per panel, sorted.
std::vector<std::vector<dim_t>> linked_cells(const ViewModel& v, int panel, dim_t linear);

// The least height (px) of the digits of a value that a class reads on a projector: the
// readability rule of lesson steps (the cells of the current step and the highlighted ones).
constexpr float kReadableTextPx = 14.0f;
// A cell's value text is drawn at this share of the cell's side (at most kMaxValueTextPx).
constexpr float kValueTextShare = 0.7f;
constexpr float kMaxValueTextPx = 40.0f;
// Value text of a cell of z px: the font size (0: the cell is too small for text).
inline float value_text_px(float z) {
    const float f = std::min(z * kValueTextShare, kMaxValueTextPx);
    return f >= 8.0f ? f : 0.0f;
}

// [SECTION] following the step

// A box on the canvas, in cells: [x0, x1) x [y0, y1).
struct CellBox {
    double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    double width() const { return x1 - x0; }
    double height() const { return y1 - y0; }
};

// What a canvas that follows the step keeps in view (layout_view must have run): the box of the
// step's cells (and the padding cells it reads) over every panel, or, where that box is wider
// than max_w or taller than max_h cells, the box of those of the step's destination panel (the
// first driver's: its map's destination, its relation's result), or else that panel's first
// current cell. False when the step has no cells.
bool follow_box(const ViewModel& v, const StepState& st, double max_w, double max_h, CellBox& box);

// The least cell size of a canvas following the step, in pixels: room for a value's digits in
// every cell at the app's font (a fitted view smaller than that is zoomed in to it).
constexpr float kFollowCellPx = 28.0f;
static_assert(kFollowCellPx * kValueTextShare >= kReadableTextPx,
              "a followed step's digits must meet the readability rule");

// Pan (pixels, the canvas origin's offset as AppState::pan_x, pan_y) that centres `box` in a
// canvas of avail_w x avail_h pixels at `zoom` pixels per cell, clamped so that no empty canvas
// shows beyond the view's extent (view_w x view_h cells) where the view is larger than the canvas;
// where it is smaller along an axis, the view is centred along it.
void follow_pan(const CellBox& box, double view_w, double view_h, float zoom, float avail_w,
                float avail_h, float& pan_x, float& pan_y);

// Where a panel's title is drawn on a scrolled canvas (all in pixels): at `at` (its place above
// the panel), or, where that lies above or left of the visible canvas `visible` while the panel
// `panel` still shows there by more than the title's height (a quarter of its width), pinned to
// the canvas's top or left edge, so that a view that follows the step keeps naming the panels
// it scrolls through. `text` is the title's size. `pinned` says whether
// it moved (the GUI then draws it over a backdrop). A title pinned to the top is never drawn over
// its panel's cells: those are drawn from under it (cells_y0) where the panel still shows below it
// by half its height or a quarter of the canvas's, and else the panel, a sliver cut by the top
// edge (the row above the one a lesson follows), is not drawn at all (shown false), neither its
// cells nor its title, so that a class sees whole panels and no text over cells.
struct TitlePlace {
    float x = 0, y = 0;
    bool pinned = false;
    bool shown = true;
    float cells_y0 = 0;  // the panel's cells are drawn from this y down (the canvas's top, or
                         // under the title pinned there)
};
TitlePlace pin_title(float at_x, float at_y, float text_w, float text_h, const CellBox& panel,
                     const CellBox& visible);

// The colour scale of a panel: its largest finite |value| (1 where all are 0), so that each
// tensor gets its own symmetric scale and gradients of a few hundredths show beside activations
// of several units.
float colour_scale(const Panel& p);

// A panel title's short form, one line: the title up to its first ": ", ", " or " (" outside
// parentheses ("Strided(dY): s-1 zeros between ..." -> "Strided(dY)").
std::string short_title(const std::string& title);

// "X(n=0,c=1,h=2,w=0)"
std::string cell_name(const Panel& p, dim_t linear);
std::string format_value(float v, DataKind d);
// The value as text no wider than max_width (as `width` measures a string): format_value's
// text where it fits, else fewer significant digits, then the scientific form ("-2e-5"), else
// "" (the cell shows no text; the hover gives the value). A sign or a leading digit is never
// dropped: every text returned reads as v rounded, never as v cut.
std::string format_value_fit(float v, DataKind d, float max_width,
                             const std::function<float(const std::string&)>& width);

// [SECTION] app state

struct Selection {
    int panel = -1;
    dim_t cell = -1;
    bool valid() const { return panel >= 0 && cell >= 0; }
    bool operator==(const Selection&) const = default;
};

struct AppState {
    ViewRequest request;
    std::string descriptor = "mb1ic2ih3oc2kh2";
    std::string error;  // validation message of the last rejected request ("" when fine)
    Playback playback;
    Selection hover, pinned;
    bool hover_forced = false;  // a shot's --hover: the mouse does not move it
    bool presenter = false;
    int palette = 0;  // 0 default, 1 high contrast, 2 colour-blind safe
    float font_scale = 1.0f;
    float zoom = 0;  // pixels per cell; 0: fit on the next frame
    float pan_x = 0, pan_y = 0;
    // The canvas follows the step (key Z): cells at least kFollowCellPx, the step's cells kept in
    // the middle (follow_box); zooming or panning by hand, or fitting (F), ends it.
    bool follow = false;
};

}  // namespace convlab::app
