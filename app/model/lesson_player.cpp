// The lesson player's window-free state (lesson_player.hpp). Index:
//   [SECTION] the lesson list
//   [SECTION] a step's plan and its highlights
//   [SECTION] playback limited to a step range
//   [SECTION] the player
#include "model/lesson_player.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>

namespace convlab::app {

// [SECTION] the lesson list

std::vector<LessonEntry> list_lessons(const std::string& dir) {
    std::vector<LessonEntry> out;
    std::vector<std::string> files;
    try {
        files = lesson::lesson_files(dir);
    } catch (const std::exception& e) {
        out.push_back({dir, "", 0, e.what()});
        return out;
    }
    for (const auto& f : files) {
        LessonEntry e;
        e.file = f;
        try {
            const lesson::Lesson l = lesson::load_lesson(f);
            e.title = l.title;
            e.steps = l.steps.size();
        } catch (const std::exception& ex) {
            e.error = ex.what();
        }
        out.push_back(std::move(e));
    }
    return out;
}

std::string lesson_label(const std::string& file) {
    const std::string stem = std::filesystem::path(file).stem().string();
    std::size_t d = 0;
    while (d < stem.size() && std::isdigit(static_cast<unsigned char>(stem[d]))) ++d;
    // A course number: digits alone or before '_' / '-' / ' ' (01_backprop_1d, 17).
    if (d > 0 && (d == stem.size() || stem[d] == '_' || stem[d] == '-' || stem[d] == ' '))
        return "Lesson " + stem.substr(0, d);
    return stem;
}

// [SECTION] a step's plan

namespace {

std::string fmt_value(float v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", static_cast<double>(v));
    return b;
}

// The values of a block of a tensor, for the narration: "2" or "[1, -1, 0, 1]" (at most 12).
std::string block_text(const Tensor& t, dim_t begin, dim_t end) {
    if (end - begin == 1) return fmt_value(t.f32()[begin]);
    std::string s = "[";
    for (dim_t i = begin; i < end && i < begin + 12; ++i)
        s += (i > begin ? ", " : "") + fmt_value(t.f32()[i]);
    if (end - begin > 12) s += ", ... (" + std::to_string(end - begin) + " values)";
    return s + "]";
}

std::string index_text(const std::vector<dim_t>& at) {
    if (at.empty()) return "";
    std::string s = "[";
    for (std::size_t i = 0; i < at.size(); ++i) s += (i ? "," : "") + std::to_string(at[i]);
    return s + "]";
}

}  // namespace

StepPlan plan_step(const lesson::Lesson& l, std::size_t k,
                   std::shared_ptr<const lesson::StepResult> r) {
    const lesson::Step& s = l.steps.at(k);
    StepPlan p;
    p.request.view = s.view;
    p.request.data = DataKind::Integer;
    if (s.has_problem) {
        p.request.problem = s.problem;
        p.request.c0 = s.c0;
        // The view shows the very numbers the step was evaluated with.
        const auto take = [&](const char* name, std::vector<float>& into) {
            if (const lesson::NamedTensor* t = r->find(name))
                into.assign(t->value.f32(), t->value.f32() + t->value.numel());
        };
        take("src", p.request.src);
        take("wei", p.request.wei);
        take("diff_dst", p.request.diff_dst);
    } else {
        if (s.view != "tensors" && s.view != "timings")
            p.request.view = "tensors";  // a network step has no problem for the mapping views
        // The header names the network's first convolution (its batch from the input).
        for (const auto& layer : s.network.layers)
            if (!layer.problem_text.empty()) {
                p.request.problem = layer.problem;
                if (!s.network.input.dims.empty()) p.request.problem.mb = s.network.input.dims[0];
                break;
            }
    }
    if (p.request.view == "timings" && !s.has_problem) p.request.view = "tensors";
    p.granularity = s.granularity;
    p.panels = s.panels;
    p.range_begin = s.step_begin;
    p.range_end = s.step_end;
    p.open = s.step_start < 0 ? s.step_begin : s.step_start;
    p.map = s.map;
    const auto resolve = [&](const std::vector<lesson::Highlight>& list,
                             std::vector<ResolvedHighlight>& into) {
        for (const auto& h : list) {
            const lesson::NamedTensor* t = r->find(h.tensor);
            if (!t) continue;  // validate() reports it; a player shows what it can
            ResolvedHighlight rh;
            rh.tensor = h.tensor;
            rh.at = h.at;
            rh.text = h.tensor + index_text(h.at);
            const auto& dims = t->value.dims();
            rh.numel = t->value.numel();
            dim_t begin = 0, block = rh.numel;
            bool ok = h.at.size() <= dims.size();
            for (std::size_t i = 0; ok && i < h.at.size(); ++i) {
                if (h.at[i] < 0 || h.at[i] >= dims[i]) ok = false;
                block /= dims[i];
                begin += h.at[i] * block;
            }
            if (!ok) continue;
            rh.begin = begin;
            rh.end = begin + block;
            rh.values = block_text(t->value, rh.begin, rh.end);
            into.push_back(std::move(rh));
        }
    };
    resolve(s.highlights, p.highlights);
    resolve(s.hide, p.hidden);
    if (p.request.view == "tensors") {
        p.request.tensors = r;
        for (const auto& h : s.hide) p.request.hidden_tensors.push_back(h.tensor);
        // A network's convolution layers, for the hover links (layer i reads layer i-1's output).
        for (std::size_t i = 0; i < s.network.layers.size(); ++i) {
            const lesson::LayerSpec& layer = s.network.layers[i];
            if (layer.type != "conv") continue;
            const std::string in = i == 0 ? "input" : s.network.layers[i - 1].name;
            ViewRequest::Conv c;
            c.problem = layer.problem;
            if (!s.network.input.dims.empty()) c.problem.mb = s.network.input.dims[0];
            c.src = in;
            c.wei = layer.name + ".wei";
            c.dst = layer.name;
            c.diff_src = "diff_" + in;
            c.diff_wei = layer.name + ".diff_wei";
            c.diff_dst = "diff_" + layer.name;
            p.request.convs.push_back(std::move(c));
        }
        // A convolution step: its core tensors plus every tensor it talks about.
        const bool network = r->find("input") != nullptr && r->find("src") == nullptr;
        if (!s.show.empty()) {
            // The step's own list, then any highlighted tensor it leaves out (always drawn).
            auto& n = p.request.tensor_names;
            n = s.show;
            for (const auto* list : {&s.highlights, &s.hide})
                for (const auto& h : *list)
                    if (std::find(n.begin(), n.end(), h.tensor) == n.end()) n.push_back(h.tensor);
        } else if (network) {
            // The tensors the step talks about (highlights, checks), each gradient with its
            // tensor and each layer output with the layer's weights: readable on a projector.
            auto& n = p.request.tensor_names;
            const auto add = [&](const std::string& name) {
                if (!name.empty() && r->find(name) &&
                    std::find(n.begin(), n.end(), name) == n.end())
                    n.push_back(name);
            };
            std::vector<std::string> named;
            for (const auto& h : s.highlights) named.push_back(h.tensor);
            for (const auto& h : s.hide) named.push_back(h.tensor);
            for (const auto& c : s.checks) {
                named.push_back(c.tensor);
                if (!c.equals_tensor.empty()) named.push_back(c.equals_tensor);
            }
            for (const auto& t : named) {
                add(t);
                const auto dot = t.find('.');
                if (t.rfind("diff_", 0) == 0) add(t.substr(5));
                if (dot != std::string::npos && t.compare(dot + 1, 5, "diff_") == 0)
                    add(t.substr(0, dot + 1) + t.substr(dot + 6));
                if (dot == std::string::npos) add(t + ".wei");
            }
            // A backward step: every tensor with its gradient, so that the gradient row lines
            // up under the forward row.
            const auto is_grad = [](const std::string& x) {
                return x.rfind("diff_", 0) == 0 || x.find(".diff_") != std::string::npos;
            };
            if (std::any_of(n.begin(), n.end(), is_grad))
                for (const auto& x : std::vector<std::string>(n)) {
                    if (is_grad(x)) continue;
                    const auto dot = x.find('.');
                    add(dot == std::string::npos
                            ? "diff_" + x
                            : x.substr(0, dot + 1) + "diff_" + x.substr(dot + 1));
                }
        } else {
            // A convolution step: the tensors it talks about (highlights, checks); none named:
            // its inputs and results.
            auto& n = p.request.tensor_names;
            const auto add = [&](const std::string& name) {
                if (!name.empty() && std::find(n.begin(), n.end(), name) == n.end())
                    n.push_back(name);
            };
            for (const auto& h : s.highlights) add(h.tensor);
            for (const auto& h : s.hide) add(h.tensor);
            for (const auto& c : s.checks) {
                add(c.tensor);
                add(c.equals_tensor);
            }
            if (n.empty())
                n = {"src", "wei", "bias", "dst", "diff_dst", "diff_src", "diff_wei", "diff_bias"};
        }
    }
    return p;
}

int panel_of_tensor(const ViewModel& v, const std::string& tensor, const std::string& map) {
    const auto find = [&](const std::string& name) {
        for (std::size_t i = 0; i < v.panels.size(); ++i)
            if (v.panels[i].name == name) return static_cast<int>(i);
        return -1;
    };
    if (const int i = find(tensor); i >= 0) return i;  // the tensors view: by the tensor's name
    if (tensor.rfind("map.", 0) == 0 && !map.empty()) {
        for (const auto& l : v.links)
            if (l.name == map) return tensor == "map.src" ? l.src : l.dst;
        return -1;
    }
    // The mapping views name their panels as the formulas do.
    static const std::pair<const char*, const char*> alias[] = {
        {"src", "X"},
        {"wei", "W"},
        {"dst", "Y"},
        {"diff_dst", "dY"},
        {"diff_src", "dX"},
        {"diff_wei", "dW"},
        {"col", "B"},
        {"diff_col", "B*"},
        {"diff_dst_strided", "Z"},
        {"diff_dst_padded", "P"},
        {"wei_fliprot", "W'"},
        {"diff_src_via_forward", "dX"},
        {"src_nc1hwc0", "X5"},
        {"wei_fractal_z", "Wz"},
        {"diff_dst_nc1hwc0", "dY5"},
    };
    for (const auto& [t, p] : alias)
        if (tensor == t) return find(p);
    return -1;
}

namespace {

std::vector<std::vector<dim_t>> cells_of(const ViewModel& v,
                                         const std::vector<ResolvedHighlight>& list,
                                         const std::string& map) {
    std::vector<std::vector<dim_t>> cells(v.panels.size());
    for (const auto& h : list) {
        const int i = panel_of_tensor(v, h.tensor, map);
        if (i < 0) continue;
        auto& c = cells[static_cast<std::size_t>(i)];
        // Only a panel holding the tensor element for element (same count, row-major order).
        if (v.panels[static_cast<std::size_t>(i)].numel() != h.numel) continue;
        for (dim_t e = h.begin; e < h.end; ++e) c.push_back(e);
    }
    for (auto& c : cells) {
        std::sort(c.begin(), c.end());
        c.erase(std::unique(c.begin(), c.end()), c.end());
    }
    return cells;
}

}  // namespace

std::vector<std::vector<dim_t>> highlight_cells(const ViewModel& v, const StepPlan& plan) {
    return cells_of(v, plan.highlights, plan.map);
}

std::vector<std::vector<dim_t>> hidden_cells(const ViewModel& v, const StepPlan& plan) {
    return cells_of(v, plan.hidden, plan.map);
}

bool covers(const ResolvedHighlight& h, const std::string& tensor, const std::vector<dim_t>& index,
            const std::vector<dim_t>& dims) {
    if (h.tensor != tensor) return false;
    // The block [begin, end) the index prefix selects, against h's block: any overlap.
    dim_t begin = 0, block = h.numel;
    for (std::size_t i = 0; i < index.size() && i < dims.size(); ++i) {
        block /= std::max<dim_t>(1, dims[i]);
        begin += index[i] * block;
    }
    return begin < h.end && h.begin < begin + block;
}

StepView check_step_view(const lesson::Lesson& l, std::size_t k,
                         std::shared_ptr<const lesson::StepResult> r) {
    const lesson::Step& s = l.steps.at(k);
    const StepPlan plan = plan_step(l, k, r);
    StepView out;
    out.view = plan.request.view;
    ViewModel v;
    try {
        v = build_view(plan.request);
    } catch (const Error& e) {
        throw lesson::LessonError(s.view_pos, "the " + out.view + " view: " + e.what());
    }
    out.steps = num_steps(v, s.granularity);
    for (const auto& t : r->tensors) {
        const int i = panel_of_tensor(v, t.name, plan.map);
        if (i >= 0 && v.panels[static_cast<std::size_t>(i)].numel() == t.value.numel())
            out.tensors.push_back(t.name);
    }
    if (s.step_start >= 0 && s.step_start >= out.steps)
        throw lesson::LessonError(
            s.start_pos, "'start' = " + std::to_string(s.step_start) + ": the " + out.view +
                             " view of " + s.problem_text + " has " + std::to_string(out.steps) +
                             " " + granularity_name(s.granularity) + " steps");
    for (std::size_t i = 0; i < s.panels.size(); ++i) {
        if (panel_of_tensor(v, s.panels[i], plan.map) >= 0) continue;
        throw lesson::LessonError(s.panels_pos[i], "'panels' entry '" + s.panels[i] + "': the " +
                                                       out.view + " view has no such panel");
    }
    for (const auto* list : {&s.highlights, &s.hide})
        for (const auto& h : *list) {
            if (std::find(out.tensors.begin(), out.tensors.end(), h.tensor) != out.tensors.end())
                continue;
            std::string drawn;
            for (const auto& t : out.tensors) drawn += (drawn.empty() ? "" : ", ") + t;
            throw lesson::LessonError(
                h.pos, std::string(list == &s.hide ? "'hide' entry '" : "highlight '") + h.tensor +
                           index_text(h.at) + "': the " + out.view + " view does not draw " +
                           h.tensor + " (it draws: " + (drawn.empty() ? "no tensors" : drawn) +
                           "); choose a view that does, e.g. tensors");
        }
    const bool ranged = s.step_begin > 0 || s.step_end >= 0;
    const std::string range =
        "'steps' = [" + std::to_string(s.step_begin) + ", " + std::to_string(s.step_end) + "]: ";
    if (ranged && out.steps == 0)
        throw lesson::LessonError(s.steps_pos,
                                  range + "the " + out.view + " view has no steps to play");
    if (ranged && (s.step_end > out.steps || s.step_begin >= out.steps))
        throw lesson::LessonError(s.steps_pos, range + "the " + out.view + " view of " +
                                                   s.problem_text + " has " +
                                                   std::to_string(out.steps) + " " +
                                                   granularity_name(s.granularity) + " steps");
    return out;
}

// [SECTION] playback limited to a step range

bool clamp_to_range(Playback& pb, dim_t begin, dim_t end, dim_t n) {
    if (n <= 0) return false;
    const dim_t lo = std::clamp(begin, dim_t{0}, n - 1);
    const dim_t hi = end < 0 || end > n ? n : std::max(end, lo + 1);
    if (pb.step < lo) {
        pb.step = lo;
        return true;
    }
    if (pb.step >= hi) {
        if (!pb.paused && pb.loop) {
            pb.step = lo;
        } else {
            pb.step = hi - 1;
            pb.paused = true;
        }
        return true;
    }
    return false;
}

// [SECTION] the player

LessonPlayer::~LessonPlayer() {
    join();
}

void LessonPlayer::join() {
    if (job_ && job_->thread.joinable()) job_->thread.join();
}

void LessonPlayer::scan(const std::string& directory) {
    dir = directory;
    entries = list_lessons(directory);
}

LessonPlayer::Stamp LessonPlayer::stamp_of(const std::string& path) {
    std::error_code ec;
    Stamp st;
    st.time = std::filesystem::last_write_time(path, ec);
    if (ec) return {};
    st.size = std::filesystem::file_size(path, ec);
    if (ec) st.size = 0;
    return st;
}

bool LessonPlayer::reload_if_changed() {
    if (file_.empty() || (!lesson_ && error_.empty())) return false;
    const Stamp now = stamp_of(file_);
    if (now == stamp_) return false;
    const std::size_t step = lesson_ ? step_ : reload_step_;
    const std::string path = file_;
    if (!dir.empty()) scan(dir);  // the sidebar's list shows the new title and step count
    open(path, step);
    reload_step_ = step;  // kept when the edit does not parse: the fixed file opens there
    return true;
}

bool LessonPlayer::open(const std::string& path, std::size_t step) {
    std::shared_ptr<const lesson::Lesson> l;
    stamp_ = stamp_of(path);  // before reading: an edit while reading is seen next time
    reload_step_ = step;
    try {
        l = std::make_shared<const lesson::Lesson>(lesson::load_lesson(path));
        if (l->steps.empty()) throw lesson::LessonError({path, 0, 0}, "the lesson has no steps");
    } catch (const std::exception& e) {
        close();
        file_ = path;
        error_ = e.what();
        ++generation_;
        return false;
    }
    lesson_ = std::move(l);
    file_ = path;
    step_ = std::min(step, lesson_->steps.size() - 1);
    result_.reset();
    plan_.reset();
    error_.clear();
    start(step_);
    return true;
}

void LessonPlayer::close() {
    lesson_.reset();
    result_.reset();
    plan_.reset();
    error_.clear();
    step_ = 0;
}

bool LessonPlayer::go(std::size_t k) {
    if (!lesson_) return false;
    k = std::min(k, lesson_->steps.size() - 1);
    if (k == step_) return false;
    step_ = k;
    result_.reset();
    plan_.reset();
    error_.clear();
    start(k);
    return true;
}

std::string LessonPlayer::neighbour(int direction) const {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path me = fs::weakly_canonical(file_, ec);
    std::ptrdiff_t at = -1;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        std::error_code ec2;
        if (fs::weakly_canonical(entries[i].file, ec2) == me) at = static_cast<std::ptrdiff_t>(i);
    }
    if (at < 0) return "";
    for (std::ptrdiff_t i = at + direction;
         i >= 0 && i < static_cast<std::ptrdiff_t>(entries.size()); i += direction) {
        const LessonEntry& e = entries[static_cast<std::size_t>(i)];
        if (e.error.empty() && e.steps > 0) return e.file;
    }
    return "";
}

bool LessonPlayer::forward() {
    if (!lesson_) return false;
    if (next()) return true;
    const std::string f = neighbour(+1);
    return !f.empty() && open(f, 0);
}

bool LessonPlayer::backward() {
    if (!lesson_) return false;
    if (prev()) return true;
    const std::string f = neighbour(-1);
    return !f.empty() && open(f, SIZE_MAX);  // clamped to its last step
}

void LessonPlayer::start(std::size_t k) {
    if (job_) {
        queued_ = true;  // evaluated when the running job ends
        return;
    }
    job_ = std::make_unique<Job>();
    job_->step = k;
    job_->lesson = lesson_;
    Job* j = job_.get();
    j->thread = std::thread([j] {
        try {
            auto r = std::make_shared<lesson::StepResult>(lesson::evaluate(*j->lesson, j->step));
            j->plan = std::make_shared<StepPlan>(plan_step(*j->lesson, j->step, r));
            j->result = std::move(r);
        } catch (const std::exception& e) {
            j->error = e.what();
        }
        j->done = true;
    });
}

bool LessonPlayer::poll(bool wait) {
    while (job_) {
        if (wait) join();
        if (!job_->done) return false;
        join();
        const bool current = !queued_ && lesson_ && job_->lesson == lesson_ && job_->step == step_;
        if (current) {
            result_ = job_->result;
            plan_ = job_->plan;
            error_ = job_->error;
            ++generation_;
            job_.reset();
            return true;
        }
        // Stale (the step or lesson changed meanwhile): evaluate the current step.
        job_.reset();
        queued_ = false;
        if (!lesson_) return false;
        start(step_);
        if (!wait) return false;
    }
    return false;
}

}  // namespace convlab::app
