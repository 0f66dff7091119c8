// The sidebar: view, parameters, playback, display, export.
#include "gui/app.hpp"

namespace convlab::ui {

// [SECTION] sidebar

namespace {

bool input_dim(const char* label, dim_t& v, dim_t lo = 0) {
    const dim_t step = 1;
    bool changed = ImGui::InputScalar(label, ImGuiDataType_S64, &v, &step, nullptr, "%lld");
    if (changed && v < lo) v = lo;
    return changed;
}

struct Preset {
    const char* label;
    const char* desc;
};
const Preset kPresets[] = {
    {"lesson: 2x3x3 input, 2x2x2 filters", "mb1ic2ih3oc2kh2"},
    {"stride 2, padding 1", "mb1ic1ih5oc1kh3sh2ph1"},
    {"stride 2 with leftover r = 1", "mb1ic1ih6oc1kh3sh2ph1"},
    {"dilation 2", "mb1ic1ih7oc1kh3dh1"},
    {"groups 2", "g2mb1ic4ih4oc4kh2"},
    {"asymmetric padding", "mb1ic1ih4oc1kh3ph1phe0"},
    {"1-D", "mb1ic2iw8oc2kw3"},
    {"3-D", "mb1ic1id3ih3iw3oc1kd2kh2kw2"},
    {"fractal: C = 20 (C0 16)", "mb1ic20ih2oc18kh1"},
    {"ResNet-50 3x3, 64 ch, 56x56", "mb1ic64ih56oc64kh3ph1"},
};

}  // namespace

void App::sidebar(float width) {
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(width, ImGui::GetIO().DisplaySize.y));
    ImGui::Begin("ConvLab", nullptr,
                 ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse);
    lesson.sidebar(width);
    // View
    ImGui::TextUnformatted("View");
    const auto& names = app::view_names();
    if (ImGui::BeginCombo("##view", s.request.view.c_str())) {
        for (std::size_t k = 0; k < names.size(); ++k) {
            std::string label = std::to_string(k + 1) + "  " + names[k];
            if (ImGui::Selectable(label.c_str(), names[k] == s.request.view)) set_view(names[k]);
        }
        ImGui::EndCombo();
    }
    // The timings view has its own controls (shape set, passes, its charts' export): the
    // problem, playback, following and step export of the index-map views are left out here.
    const bool maps = s.request.view != "timings";
    if (!maps)
        ImGui::TextWrapped(
            "Its controls are on the right. The problem, playback and step export belong to "
            "the index-map views: pick one of them to change those.");
    if (maps) {
        sidebar_problem(width);
        sidebar_playback(width);
    }
    if (!s.error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(230, 40, 40, 255));
        ImGui::TextWrapped("%s", s.error.c_str());
        ImGui::PopStyleColor();
    }
    // Display
    ImGui::Separator();
    ImGui::TextUnformatted("Display");
    if (ImGui::BeginCombo("palette", pal().name)) {
        for (int i = 0; i < kNumPalettes; ++i)
            if (ImGui::Selectable(palettes()[static_cast<std::size_t>(i)].name, i == s.palette))
                s.palette = i;
        ImGui::EndCombo();
    }
    ImGui::SetNextItemWidth(width * 0.5f);
    ImGui::SliderFloat("font scale", &s.font_scale, 0.6f, 3.0f, "%.1f");
    ImGui::Checkbox("presenter mode (P)", &s.presenter);
    ImGui::SameLine();
    ImGui::Checkbox("presenter window (W)", &notes_window);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "a second window for your screen: the narration, checks, next step, clock and keys; "
            "the canvas here then shows no narration (for the projector)");
    if (ImGui::Button("reset settings")) {
        apply_settings(Settings{});
        const std::string path = settings_path();
        std::error_code ec;
        if (!path.empty()) std::filesystem::remove(path, ec);
        status = path.empty() ? "settings reset" : "settings reset (" + path + " removed)";
    }
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "palette, font scale and presenter options back to their defaults; "
            "the settings file (%s) is written again when the window closes",
            settings_path().c_str());
    if (maps) {
        ImGui::SameLine();
        if (ImGui::Button("fit (F)")) set_follow(false);
        bool follow = s.follow;
        if (ImGui::Checkbox("follow the step (Z)", &follow)) set_follow(follow);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("zoom in to readable cells and keep the current step in the middle");
    }
    sidebar_export(width, maps);
    if (!status.empty()) ImGui::TextWrapped("%s", status.c_str());
    ImGui::Separator();
    if (maps)
        ImGui::TextWrapped(
            "Keys: space play, left/right step, G granularity, P presenter; H or F1 lists them "
            "all. Mouse: wheel zoom, drag pan, hover links, click pins.");
    else
        ImGui::TextWrapped(
            "Keys: P presenter, S the canvas as PNG, F11 full screen; H or F1 lists them all. "
            "Mouse: hover a bar or a dot for its measurement.");
    ImGui::End();
}

void App::sidebar_problem(float width) {
    ImGui::Separator();
    ImGui::TextUnformatted("Problem (benchdnn descriptor)");
    ImGui::SetNextItemWidth(-1);
    if (focus_field == "descriptor") {
        ImGui::SetKeyboardFocusHere();
        focus_field.clear();
    }
    if (ImGui::InputText("##desc", &s.descriptor, ImGuiInputTextFlags_EnterReturnsTrue)) {
        try {
            apply_problem(parse_descriptor(s.descriptor));
        } catch (const Error& e) {
            s.error = e.what();
        }
    }
    if (ImGui::BeginCombo("##presets", "presets ...")) {
        for (const auto& pr : kPresets)
            if (ImGui::Selectable(pr.label)) apply_problem(parse_descriptor(pr.desc));
        ImGui::EndCombo();
    }
    Problem p = edit;
    bool changed = false;
    int nd = p.ndims;
    ImGui::TextUnformatted("spatial dims");
    ImGui::SameLine();
    changed |= ImGui::RadioButton("1-D", &nd, 1);
    ImGui::SameLine();
    changed |= ImGui::RadioButton("2-D", &nd, 2);
    ImGui::SameLine();
    changed |= ImGui::RadioButton("3-D", &nd, 3);
    p.ndims = nd;
    ImGui::PushItemWidth(width * 0.45f);
    changed |= input_dim("N (batch)", p.mb);
    changed |= input_dim("C (in channels)", p.ic);
    changed |= input_dim("K (out channels)", p.oc);
    changed |= input_dim("groups", p.groups);
    ImGui::PopItemWidth();
    const float cw = (width - 130.0f * s.font_scale * content_scale) / static_cast<float>(p.ndims);
    // shift: the value shown is the problem's minus shift (dilation as the descriptor writes it).
    // prefix: before the axis name in the field ("d": "dh 1", as the descriptor's dh1).
    const auto axis_row = [&](const char* label, SpatialDims& a, dim_t lo, dim_t shift = 0,
                              const char* tip = nullptr, const char* prefix = "") {
        ImGui::PushID(label);
        for (int i = 0; i < p.ndims; ++i) {
            ImGui::PushID(i);
            ImGui::SetNextItemWidth(cw - 8);
            dim_t shown = a[static_cast<std::size_t>(i)] - shift;
            if (i == 0 && focus_field == label) {
                ImGui::SetKeyboardFocusHere();
                focus_field.clear();
            }
            if (ImGui::DragScalar("##a", ImGuiDataType_S64, &shown, 0.1f, nullptr, nullptr,
                                  (prefix + std::string(p.axis_name(i)) + " %lld").c_str())) {
                a[static_cast<std::size_t>(i)] = shown + shift;
                changed = true;
            }
            if (tip && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tip);
            if (a[static_cast<std::size_t>(i)] < lo) a[static_cast<std::size_t>(i)] = lo;
            ImGui::PopID();
            ImGui::SameLine();
        }
        ImGui::TextUnformatted(label);
        if (tip && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tip);
        ImGui::PopID();
    };
    axis_row("input", p.in, 0);
    axis_row("kernel", p.kernel, 0);
    axis_row("stride", p.stride, 0);
    // Dilation as the descriptor writes it (benchdnn's dh: 0 = none), so that the field and
    // the descriptor above say the same number.
    axis_row("dilation", p.dilation, 1, 1,
             "dilation as benchdnn's descriptor writes it (dh, dw): 0 = none, 1 = one gap "
             "between kernel taps",
             "d");
    axis_row("pad begin", p.pad_begin, 0);
    axis_row("pad end", p.pad_end, 0);
    if (changed) {
        edit = p;
        apply_problem(p);
    }
    ImGui::SetNextItemWidth(width * 0.3f);
    dim_t c0 = s.request.c0;
    if (input_dim("C0 (DaVinci lanes)", c0, 1)) {
        app::ViewRequest r = s.request;
        r.c0 = c0;
        request(r);
    }
    int data = static_cast<int>(s.request.data);
    ImGui::TextUnformatted("data");
    ImGui::SameLine();
    bool dchanged = ImGui::RadioButton("small integers", &data, 0);
    ImGui::SameLine();
    dchanged |= ImGui::RadioButton("random reals", &data, 1);
    if (dchanged) {
        app::ViewRequest r = s.request;
        r.data = static_cast<app::DataKind>(data);
        request(r);
    }
}

void App::sidebar_playback(float width) {
    ImGui::Separator();
    ImGui::TextUnformatted("Playback");
    const dim_t n = steps();
    auto& pb = s.playback;
    if (ImGui::Button("|<")) {
        pb.scrub(0, n);
        step_dirty = true;
    }
    ImGui::SameLine();
    if (ImGui::Button("<")) {
        pb.paused = true;
        pb.step_back(n);
        step_dirty = true;
    }
    ImGui::SameLine();
    if (ImGui::Button(pb.paused ? "play" : "pause")) pb.paused = !pb.paused;
    ImGui::SameLine();
    if (ImGui::Button(">")) {
        pb.paused = true;
        pb.step_forward(n);
        step_dirty = true;
    }
    ImGui::SameLine();
    if (ImGui::Button(">|")) {
        pb.scrub(n - 1, n);
        step_dirty = true;
    }
    ImGui::SameLine();
    ImGui::Checkbox("loop", &pb.loop);
    dim_t k = pb.step;
    const dim_t lo = 0, hi = std::max<dim_t>(0, n - 1);
    ImGui::SetNextItemWidth(-1);
    if (ImGui::SliderScalar("##step", ImGuiDataType_S64, &k, &lo, &hi, "step %lld")) {
        pb.scrub(k, n);
        step_dirty = true;
    }
    float speed = static_cast<float>(pb.speed);
    ImGui::SetNextItemWidth(width * 0.5f);
    if (ImGui::SliderFloat("steps / s", &speed, 0.25f, 120.0f, "%.2f",
                           ImGuiSliderFlags_Logarithmic))
        pb.speed = speed;
    int g = static_cast<int>(pb.granularity);
    ImGui::TextUnformatted("step =");
    ImGui::SameLine();
    bool gch = ImGui::RadioButton("element", &g, 0);
    ImGui::SameLine();
    gch |= ImGui::RadioButton("line", &g, 1);
    gch |= ImGui::RadioButton("tile", &g, 2);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "%lld lines at a time: 16 columns of the column matrix (a GEMM panel), "
            "one 16 x C0 fractal",
            static_cast<long long>(kTileLines));
    ImGui::SameLine();
    gch |= ImGui::RadioButton("whole", &g, 3);
    if (gch) {
        pb.granularity = static_cast<Granularity>(g);
        pb.step = 0;
        step_dirty = true;
    }
}

// The window as PNG (S) on every view; the SVG of the panels and the steps as PNGs or a GIF
// only on the index-map views (maps).
void App::sidebar_export(float width, bool maps) {
    ImGui::Separator();
    ImGui::TextUnformatted("Export to");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-1);
    ImGui::InputText("##dir", &ex.dir);
    if (ImGui::Button(maps ? "PNG (S)" : "the canvas as PNG (S)"))
        ex.png = ex.dir + "/" + s.request.view + ".png";
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("the canvas alone, without the sidebar, the narration or the mouse");
    if (!maps) return;
    ImGui::SameLine();
    if (ImGui::Button("SVG")) ex.svg = ex.dir + "/" + s.request.view + ".svg";
    const dim_t n = steps();
    if (seq_to_last) seq_to = std::max<dim_t>(0, n - 1);
    ImGui::SetNextItemWidth(width * 0.36f);
    input_dim("from", seq_from);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(width * 0.36f);
    if (input_dim("to", seq_to)) seq_to_last = false;
    const bool pngs = ImGui::Button("steps from..to as numbered PNGs");
    ImGui::SameLine();
    const bool gif = ImGui::Button("GIF");
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("the same steps as one looping GIF of the canvas, at steps / s (key E)");
    if (pngs || gif) start_sequence(seq_from, seq_to, gif);
}

// Steps [from, to] (clamped to the view's) as numbered PNGs or one GIF, at the playback speed.
void App::start_sequence(dim_t from, dim_t to, bool gif) {
    const dim_t n = steps();
    if (n <= 0 || ex.sequence) return;
    ex.sequence = true;
    ex.seq_next = std::clamp<dim_t>(from, 0, n - 1);
    ex.seq_end = std::clamp(to, ex.seq_next, n - 1) + 1;
    ex.written.clear();
    ex.gif = gif ? ex.dir + "/" + s.request.view + ".gif" : "";
    ex.gif_fps = s.playback.speed;
}

// E: the GIF without the sidebar (a lesson, presenter mode): a lesson step's range of steps,
// else the sidebar's from..to.
void App::gif_key() {
    const app::StepPlan* plan = lesson.active() ? lesson.plan() : nullptr;
    if (plan && view && view->name == plan->request.view)
        start_sequence(plan->range_begin, plan->range_end < 0 ? steps() - 1 : plan->range_end - 1,
                       true);
    else
        start_sequence(seq_from, seq_to_last ? steps() - 1 : seq_to, true);
}

}  // namespace convlab::ui
