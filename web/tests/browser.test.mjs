// Browser tests of the WebAssembly build (web/build.sh): Debian's Chromium, headless with
// software WebGL (SwiftShader), driven through puppeteer-core against the site served on
// 127.0.0.1 by web/serve.py. Run by `./test.sh --web` (or `npm test` here; SITE=dir optional).
// The page is compared with the desktop app (CONVLAB_DESKTOP, default build/app/convlab): the same
// step's screenshot region by region, and the lessons' check lines.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, readFileSync, readdirSync,
         existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import puppeteer from "puppeteer-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const site = process.env.SITE || path.join(root, "build-web/site");
const shots = process.env.SHOTS || path.join(root, "build-web/shots");
const chromium = process.env.CHROMIUM || "/usr/bin/chromium";
const desktop = process.env.CONVLAB_DESKTOP || path.join(root, "build/app/convlab");
const W = 1600, H = 1000;  // the desktop shot's default size, and the browser's viewport

let server, base, browser, profile;

// The server prints its URL on its first line (port 0: a free port).
function startServer() {
  return new Promise((resolve, reject) => {
    const p = spawn("python3", [path.join(root, "web/serve.py"), site, "--port", "0"],
                    { stdio: ["ignore", "pipe", "inherit"] });
    p.on("error", reject);
    p.stdout.once("data", (d) => {
      const m = /http:\/\/127\.0\.0\.1:\d+\//.exec(String(d));
      if (!m) reject(new Error("serve.py printed no URL: " + d));
      else resolve([p, m[0]]);
    });
  });
}

before(async () => {
  assert.ok(existsSync(desktop), `no desktop convlab at ${desktop} (set CONVLAB_DESKTOP)`);
  [server, base] = await startServer();
  profile = mkdtempSync(path.join(tmpdir(), "convlab-chromium-"));
  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    userDataDir: profile,
    args: ["--headless=new", "--no-sandbox", "--use-angle=swiftshader",
           "--enable-unsafe-swiftshader", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run",
           `--window-size=${W},${H}`],
    defaultViewport: { width: W, height: H },
  });
  mkdirSync(shots, { recursive: true });
});

after(async () => {
  if (browser) await browser.close();
  if (server) server.kill();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

// Opens the page at `fragment`, collecting console errors and page errors; resolves once the
// app's first frame has been drawn (the app sets the fragment from its frame loop, after
// drawing). firstFrameMs: from the navigation to then.
async function open(fragment) {
  const page = await browser.newPage();
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  const t0 = Date.now();
  await page.goto(base + fragment, { waitUntil: "load" });
  await page.waitForFunction(() => window.convlabReady === true && location.hash.length > 1,
                             { timeout: 60000 });
  const firstFrameMs = Date.now() - t0;
  return { page, errors, firstFrameMs };
}

const hash = (page) => page.evaluate(() => location.hash);
// Waits for n display frames of the page (brought to the front first: a background tab gets
// none, and the image helper's tab below takes the front).
const frames = async (page, n) => {
  await page.bringToFront();
  return page.evaluate((k) => new Promise((r) => {
    const f = () => (--k <= 0 ? r() : requestAnimationFrame(f)); requestAnimationFrame(f);
  }), n);
};

// Runs fn(images, ...args) in a page of its own, the PNGs (Buffers) decoded there to
// {w, h, data} (RGBA): the pixels stay in the browser, only fn's result comes back. fn must be
// self-contained (it is sent as its source).
let helper;
async function inPage(pngs, fn, ...args) {
  helper ||= await browser.newPage();
  return helper.evaluate(async (list, src, rest) => {
    const images = [];
    for (const b64 of list) {
      const img = new Image();
      img.src = "data:image/png;base64," + b64;
      await img.decode();
      const c = document.createElement("canvas");
      c.width = img.width; c.height = img.height;
      const g = c.getContext("2d");
      g.drawImage(img, 0, 0);
      images.push({ w: c.width, h: c.height, data: g.getImageData(0, 0, c.width, c.height).data });
    }
    return new Function("return " + src)()(images, ...rest);
  }, pngs.map((p) => Buffer.from(p).toString("base64")), fn.toString(), args);
}

// A screenshot of the page, kept in shots/ as NAME.png for a person to look at.
async function shot(page, name) {
  const png = await page.screenshot({ type: "png" });
  writeFileSync(path.join(shots, name + ".png"), png);
  return png;
}

// Colour statistics: distinct colours (4 bits a channel) and the share unlike the top-left pixel.
function stats([img]) {
  const d = img.data, colours = new Set();
  let differ = 0;
  for (let i = 0; i < d.length; i += 4) {
    colours.add((d[i] >> 4) << 8 | (d[i + 1] >> 4) << 4 | d[i + 2] >> 4);
    if (Math.abs(d[i] - d[0]) + Math.abs(d[i + 1] - d[1]) + Math.abs(d[i + 2] - d[2]) > 30) differ++;
  }
  return { colours: colours.size, differ: differ / (d.length / 4) };
}

// Pixels of each image within `tol` of colour rgb in the rectangle [x0, x1) x [y0, y1).
function countColour(images, rgb, tol, x0, y0, x1, y1) {
  return images.map((img) => countIn(img));
  function countIn(img) {
  let n = 0;
  for (let y = y0; y < y1; y++)
    for (let x = x0; x < x1; x++) {
      const i = (y * img.w + x) * 4;
      if (Math.abs(img.data[i] - rgb[0]) <= tol && Math.abs(img.data[i + 1] - rgb[1]) <= tol &&
          Math.abs(img.data[i + 2] - rgb[2]) <= tol) n++;
    }
  return n;
  }
}

// Tile by tile (tile x tile pixels), the share of pixels whose channels differ by more than 48
// between a and b (same size), tiles whose origin is in one of the rectangles `skip` ([x0, y0,
// x1, y1]) left out. Returns [{x, y, share}].
function tileDiffs([a, b], tile, skip) {
  const out = [];
  for (let ty = 0; ty < a.h; ty += tile)
    for (let tx = 0; tx < a.w; tx += tile) {
      if (skip.some(([x0, y0, x1, y1]) => tx >= x0 && tx < x1 && ty >= y0 && ty < y1)) continue;
      let n = 0, bad = 0;
      for (let y = ty; y < Math.min(ty + tile, a.h); y++)
        for (let x = tx; x < Math.min(tx + tile, a.w); x++) {
          const i = (y * a.w + x) * 4;
          n++;
          if (Math.abs(a.data[i] - b.data[i]) > 48 || Math.abs(a.data[i + 1] - b.data[i + 1]) > 48 ||
              Math.abs(a.data[i + 2] - b.data[i + 2]) > 48) bad++;
        }
      out.push({ x: tx, y: ty, share: bad / n });
    }
  return out;
}

// The desktop app's shot of a lesson step (under xvfb-run where there is no display: convlab
// shot arranges that itself), with the page's "copy link" bar's corner kept free of the header
// as the page keeps it (--corner), so that the header wraps alike.
function desktopShot(lesson, step, name, [cw, ch]) {
  const out = path.join(shots, name + ".png");
  execFileSync(desktop, ["shot", "--lesson", String(lesson), "--step", String(step),
                         "--size", `${W}x${H}`, "--corner", `${cw}x${ch}`, "--out", out],
               { cwd: root, stdio: ["ignore", "ignore", "inherit"], timeout: 120000 });
  return readFileSync(out);
}

// The "copy link" bar the page lays over the canvas's top right corner (not the app's).
// Regions the browser draws differently on purpose: the page's "copy link" bar over the canvas's
// top right corner, and the sidebar's "presenter window" box, disabled in the browser.
const webOnly = [[W - 200, 0, W, 40], [200, 900, 400, 1000]];
const lookedAt = (png) => inPage([png], stats);

test("the page loads without console errors and its first frame appears", async () => {
  const { page, errors, firstFrameMs } = await open("/");
  await frames(page, 3);
  console.log(`# first frame after ${firstFrameMs} ms`);
  assert.equal(await hash(page), "#lesson=1&step=1");
  const s = await lookedAt(await shot(page, "lesson01_step1"));
  // A blank canvas has one colour; the lesson's panels, values and narration have many.
  assert.ok(s.colours >= 20, `only ${s.colours} colours on the page`);
  assert.ok(s.differ > 0.05, `only ${(100 * s.differ).toFixed(1)}% of the page drawn`);
  assert.deepEqual(errors, []);
  await page.close();
});

test("lesson 1 step 1 looks as on the desktop, region by region", async () => {
  const { page, errors } = await open("/#lesson=1&step=1");
  await frames(page, 5);
  const web = await shot(page, "lesson01_step1_web");
  await page.keyboard.press("n");  // step 2: what a page that did not follow would show
  await page.waitForFunction(() => location.hash === "#lesson=1&step=2", { timeout: 20000 });
  await frames(page, 5);
  const web2 = await shot(page, "lesson01_step2_web");
  // The bar's box in device pixels, as the app reads it (web_glue.cpp, corner_width/height).
  const corner = await page.evaluate(() => {
    const r = document.getElementById("bar").getBoundingClientRect(), d = window.devicePixelRatio || 1;
    return [Math.round(r.width * d), Math.round(r.height * d)];
  });
  const desk = desktopShot(1, 1, "lesson01_step1_desktop", corner);
  const tiles = await inPage([web, desk], tileDiffs, 100, webOnly);
  const off = tiles.filter((t) => t.share > 0.02);
  console.log(`# ${tiles.length - off.length}/${tiles.length} regions of 100x100 px as on the ` +
              `desktop; worst ${Math.max(...tiles.map((t) => t.share)).toFixed(4)}`);
  assert.deepEqual(off, [], "regions unlike the desktop's shot of the same step");
  // The comparison tells steps apart: step 2 in the browser is not the desktop's step 1.
  const off2 = (await inPage([web2, desk], tileDiffs, 100, webOnly)).filter((t) => t.share > 0.02);
  assert.ok(off2.length > 0, "step 2 looks like step 1: the comparison cannot see a step");
  assert.deepEqual(errors, []);
  await page.close();
});

test("a key moves the lesson to its next step, and the link follows", async () => {
  const { page, errors } = await open("/#lesson=1&step=1");
  await page.click("canvas");
  await page.keyboard.press("n");
  await page.waitForFunction(() => location.hash === "#lesson=1&step=2", { timeout: 20000 });
  await page.keyboard.press("b");
  await page.waitForFunction(() => location.hash === "#lesson=1&step=1", { timeout: 20000 });
  assert.deepEqual(errors, []);
  await page.close();
});

test("hovering a cell lights its sources", async () => {
  // dX = conv(P, W'): each dX cell is fed by cells of dY, Z, P, W and W' (the panels above and
  // left of it), which light in the "linked" colour while it is hovered.
  const link = "#view=stride&problem=mb1ic1ih6oc1kh3sh2ph1&step=7&granularity=element";
  const { page, errors } = await open("/" + link);
  await page.mouse.move(1, H - 1);
  await frames(page, 5);
  const still = await shot(page, "hover_before");
  // The default theme's "linked" fill as drawn (#56b4e9 over the cell: as the legend's square).
  const linked = [111, 191, 236];
  // dX's cells not written yet (the theme's "pending" grey), right of the middle, lower half:
  // the centres of 11 x 11 px blocks of that grey.
  const cells = await inPage([still], ([img], w, h) => {
    const grey = (x, y) => {
      const i = (y * img.w + x) * 4;
      return img.data[i] === 226 && img.data[i + 1] === 226 && img.data[i + 2] === 226;
    };
    const out = [];
    for (let y = Math.floor(h / 2); y < h - 10; y += 6)
      for (let x = Math.floor(w * 0.55); x < w - 10; x += 6) {
        let all = true;
        for (let dy = -5; dy <= 5 && all; dy++)
          for (let dx = -5; dx <= 5 && all; dx++) all = grey(x + dx, y + dy);
        if (all && out.every(([cx, cy]) => Math.abs(cx - x) > 30 || Math.abs(cy - y) > 30))
          out.push([x, y]);
      }
    return out;
  }, W, H);
  assert.ok(cells.length >= 4, `found ${cells.length} dX cells to hover`);
  const [x, y] = cells[0];
  await page.mouse.move(x, y);
  await frames(page, 5);
  const lit = await shot(page, "hover_after");
  // The linked colour left of the hovered cell, above its row (the source panels; the cell
  // itself and its tooltip, right and below of the pointer, left out).
  const [before, after] = await inPage([still, lit], countColour, linked, 6, 0, 0, x - 40, y - 40);
  console.log(`# hover at ${x},${y}: ${before} -> ${after} pixels in the linked colour`);
  assert.ok(after - before > 2000, "hovering a dX cell lit no source cell");
  assert.deepEqual(errors, []);
  await page.close();
});

test("a view's link opens that view on that step", async () => {
  // Step 7 exists at element granularity (a step past the view's last would be clamped).
  const link = "#view=stride&problem=mb1ic1ih6oc1kh3sh2ph1&step=7&granularity=element";
  const { page, errors } = await open("/" + link);
  await frames(page, 5);
  assert.match(await hash(page), /^#view=stride&problem=[^&]+&step=7&granularity=element$/);
  const s = await lookedAt(await shot(page, "view_stride_step7"));
  assert.ok(s.colours >= 10, `only ${s.colours} colours on the page`);
  assert.deepEqual(errors, []);
  await page.close();
});

test("the PNG export (key S) downloads the canvas as a PNG file", async () => {
  const { page, errors } = await open("/#lesson=1&step=1");
  const dir = mkdtempSync(path.join(tmpdir(), "convlab-downloads-"));
  try {
    const cdp = await page.createCDPSession();
    await cdp.send("Browser.setDownloadBehavior", { behavior: "allow", downloadPath: dir });
    await page.click("canvas");
    await page.keyboard.press("s");
    let files = [];
    for (let i = 0; i < 200 && !files.length; i++) {
      await new Promise((r) => setTimeout(r, 100));
      files = readdirSync(dir).filter((f) => f.endsWith(".png"));
    }
    assert.equal(files.length, 1, `downloads: ${readdirSync(dir)}`);
    const png = readFileSync(path.join(dir, files[0]));
    assert.equal(png.subarray(1, 4).toString(), "PNG");
    const w = png.readUInt32BE(16), h = png.readUInt32BE(20);  // IHDR
    assert.ok(w > 200 && h > 200, `a ${w}x${h} PNG`);
    assert.ok((await lookedAt(png)).colours >= 10, "the PNG is blank");
    assert.deepEqual(errors, []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await page.close();
  }
});

test("the canvas follows the browser window's size", async () => {
  const { page, errors } = await open("/#lesson=1&step=1");
  await page.setViewport({ width: 1100, height: 700 });
  await page.waitForFunction(() => {
    const c = document.getElementById("canvas");
    return c.width === 1100 && c.height === 700;
  }, { timeout: 20000 });
  await frames(page, 5);
  const png = await shot(page, "lesson01_step1_1100x700");
  assert.equal(png.readUInt32BE(16), 1100);
  // The app lays itself out for the new size: its narration panel's border and text reach the
  // right part of the window (drawn for 1600 px, they would be cut off, and a stretched
  // 1600 px picture would show no pixel of the background colour left there).
  const right = await inPage([png], ([img]) => {
    const colours = new Set();
    for (let y = 0; y < img.h; y++)
      for (let x = 1000; x < img.w; x++) {
        const i = (y * img.w + x) * 4;
        colours.add(img.data[i] << 16 | img.data[i + 1] << 8 | img.data[i + 2]);
      }
    return colours.size;
  });
  assert.ok(right >= 5, "nothing drawn at the right edge of the resized canvas");
  assert.deepEqual(errors, []);
  await page.close();
});

test("the lessons' checks give the same lines in the browser as on the desktop", async () => {
  const lessons = readdirSync(path.join(root, "lessons")).filter((f) => f.endsWith(".toml"))
    .sort().map((f) => path.join("lessons", f));
  let out = "";
  try {
    out = execFileSync(desktop, ["lesson", "check", "--each", ...lessons],
                       { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    out = String(e.stdout) + String(e.stderr);  // a failed check: still its lines
  }
  // Paths from lessons/ on, as both name them. A check with a tolerance whose result is not
  // exact (Winograd's rounding) reports its largest error, which depends on the order of the
  // float operations (the desktop's vector code, the browser's portable code): that report is
  // masked, everything else (the check, its outcome, exact results) must be the same.
  const inexact = /max \|got - expected\| = (?!0 )[^ ]+ at \[[^\]]*\] \(got [^,]+, expected [^)]+\)/;
  const norm = (l) => l.trim().replace(/^(PASS|FAIL) \/?(?:.*\/)?(lessons\/)/, "$1 $2");
  const mask = (l) => l.replace(inexact, "max |got - expected| = (inexact)");
  const want = out.split("\n").filter((l) => /^\s*(PASS|FAIL) /.test(l)).map(norm).sort();
  const { page, errors } = await open("/#lesson=1&step=1");
  const got = (await page.evaluate(() => Module.ccall("convlab_lesson_checks", "string", [], [])))
    .split("\n").filter((l) => /^(PASS|FAIL) /.test(l)).map(norm).sort();
  console.log(`# ${got.length} check lines in the browser, ${want.length} on the desktop, ` +
              `${got.filter((l) => l.startsWith("PASS")).length} PASS`);
  assert.equal(new Set(want.map((l) => l.split(":")[0])).size, lessons.length,
               "a lesson without check lines on the desktop");
  const differ = got.filter((l) => !want.includes(l));
  console.log(`# ${differ.length} lines differ in a rounding error only: ${differ.join(" | ")}`);
  assert.deepEqual(got.map(mask), want.map(mask));
  assert.deepEqual(errors, []);
  await page.close();
});

test("lesson 14, lesson 17 and the fractal view render (screenshots to look at)", async () => {
  for (const [fragment, name] of [["#lesson=14&step=1", "lesson14_step1"],
                                  ["#lesson=17&step=1", "lesson17_step1"],
                                  ["#view=fractal&problem=mb1ic16ih4oc16kh3ph1&step=3",
                                   "view_fractal_step3"]]) {
    const { page, errors } = await open("/" + fragment);
    await frames(page, 5);
    const s = await lookedAt(await shot(page, name));
    assert.ok(s.colours >= 10, `${name}: only ${s.colours} colours`);
    assert.deepEqual(errors, [], name);
    await page.close();
  }
});

// The timings view's state as the app exposes it (convlab_timings_state: JSON).
const timingsState = (page) =>
  page.evaluate(() => JSON.parse(Module.ccall("convlab_timings_state", "string", [], [])));
const centre = ([x0, y0, x1, y1]) => [(x0 + x1) / 2, (y0 + y1) / 2];

// The timings view's state once its run has finished and its "Export this chart" button takes
// clicks and was drawn at the same place in two successive frames of the view (the chart's
// height follows the footer's of the frame before, so a button moves once after a change: a
// rectangle read from a single frame may be where the button no longer is).
async function settledTimingsState(page, timeoutMs = 60000) {
  const t0 = Date.now();
  let prev = null;
  for (;;) {
    await frames(page, 1);
    const st = await timingsState(page);
    if (prev && st.frame > prev.frame && st.finished && !st.running && !st.exporting &&
        st.export_enabled && prev.export_enabled &&
        JSON.stringify(st.export_button) === JSON.stringify(prev.export_button)) return st;
    assert.ok(Date.now() - t0 < timeoutMs, `the timings view did not settle: ${JSON.stringify(st)}`);
    prev = st;
  }
}

// Files the page downloads into a folder of their own while `act` runs, once `want` (a list of
// suffixes) have all arrived (Chrome writes a .crdownload first, renamed when complete).
async function downloads(page, want, act, timeoutMs = 60000) {
  const dir = mkdtempSync(path.join(tmpdir(), "convlab-downloads-"));
  const cdp = await page.createCDPSession();
  await cdp.send("Browser.setDownloadBehavior", { behavior: "allow", downloadPath: dir });
  await act();
  const t0 = Date.now();
  let files = [];
  while (Date.now() - t0 < timeoutMs) {
    files = readdirSync(dir).filter((f) => !f.endsWith(".crdownload"));
    if (want.every((w) => files.some((f) => f.endsWith(w)))) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const out = Object.fromEntries(files.map((f) => [f, readFileSync(path.join(dir, f))]));
  rmSync(dir, { recursive: true, force: true });
  return out;
}

let timingsPage = null;  // the page of the timings run, whose charts the next test exports

test("the timings view runs the classroom shapes on the wasm engine, every measurement verified",
     async () => {
  const { page, errors } = await open("/#view=timings&problem=mb1ic2ih3oc1kh2&step=0");
  await frames(page, 5);
  let st = await timingsState(page);
  assert.ok(st.run_button && st.run_button[2] > st.run_button[0], "no Run button drawn");
  assert.equal(st.running, false);
  await page.mouse.click(...centre(st.run_button));
  // The run is measured a slice a frame: the page keeps drawing, and the progress is seen
  // between the start and the end.
  const t0 = Date.now();
  let seenMidway = 0, framesDuring = 0;
  await page.evaluate(() => {
    window.framesDuringRun = 0;
    const f = () => { window.framesDuringRun++; requestAnimationFrame(f); };
    requestAnimationFrame(f);
  });
  for (;;) {
    st = await timingsState(page);
    if (st.running && st.done > 0 && st.done < st.total) seenMidway++;
    if (st.finished) break;
    assert.ok(Date.now() - t0 < 600000, `no end after 10 min: ${JSON.stringify(st)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  framesDuring = await page.evaluate(() => window.framesDuringRun);
  const seconds = (Date.now() - t0) / 1000;
  console.log(`# timings run: ${st.verified} of ${st.rows} measurements verified ` +
              `(${st.total} planned) in ${seconds.toFixed(1)} s, ${framesDuring} frames drawn ` +
              `meanwhile, progress seen midway ${seenMidway} times`);
  console.log(`# machine record: ${st.machine}`);
  assert.equal(st.error, "");
  assert.ok(st.total >= 20, `only ${st.total} measurements planned`);
  assert.equal(st.rows, st.total);
  assert.equal(st.verified, st.rows, st.message);
  assert.equal(st.failed, 0);
  assert.ok(st.charts >= 3, `${st.charts} charts`);
  assert.ok(seenMidway >= 1, "no progress seen between the start and the end of the run");
  assert.ok(framesDuring >= 10, `only ${framesDuring} frames drawn during the run`);
  const agent = await page.evaluate(() => navigator.userAgent);
  assert.ok(st.machine.startsWith(`browser, WebAssembly (${agent})`), st.machine);
  // Chromium rounds the page's clock to 100 us, longer than a call of a classroom layer: each
  // timed run is a batch of calls, so that no verified time is 0 and every bar is drawn (a
  // median of 0 was a FAIL cross beside "all verified"), and the footer says so.
  st = await settledTimingsState(page);
  console.log(`# clock tick ${(st.clock_tick * 1e6).toFixed(1)} us; ${st.batched} of ${st.rows} ` +
              `measurements timed in batches (up to ${st.most_calls} calls); chart ${st.chart}: ` +
              `${st.plotted_marks} marks plotted, ${st.failed_marks} FAIL`);
  assert.deepEqual(st.zero_times, [], "verified measurements timed as 0");
  assert.equal(st.failed_marks, 0, `FAIL marks on ${st.chart}`);
  assert.ok(st.plotted_marks >= 5, `${st.plotted_marks} marks plotted on ${st.chart}`);
  if (st.clock_tick > 1e-6) {
    assert.ok(st.batched > 0, "a coarse clock and no batched measurement");
    assert.ok(st.footer.some((l) => /^Clock: .*batch of/.test(l)), st.footer.join("\n"));
  }
  // The footer's "copy" button is wholly in view and covers no text of its Reproduce line.
  const [cx0, cy0, cx1, cy1] = st.copy_button, [tx0, ty0, tx1, ty1] = st.reproduce_text;
  const [kx0, ky0, kx1, ky1] = st.footer_clip;
  assert.ok(cx1 > cx0 && cx0 >= kx0 && cx1 <= kx1 && cy0 >= ky0 && cy1 <= ky1,
            `copy button ${st.copy_button} outside the view's area ${st.footer_clip}`);
  assert.ok(cx1 <= tx0 || cx0 >= tx1 || cy1 <= ty0 || cy0 >= ty1,
            `copy button ${st.copy_button} over the Reproduce line ${st.reproduce_text}`);
  const s = await lookedAt(await shot(page, "timings_run"));
  assert.ok(s.colours >= 10, `only ${s.colours} colours`);
  assert.deepEqual(errors, []);
  timingsPage = { page, errors };
});

test("a timings chart downloads as SVG and PNG (no cairo in the browser)", async () => {
  assert.ok(timingsPage, "the timings run above did not finish");
  const { page, errors } = timingsPage;
  try {
    const st = await settledTimingsState(page);
    const got = await downloads(page, [".svg", ".png", "results.json"],
                                () => page.mouse.click(...centre(st.export_button)));
    const names = Object.keys(got).sort();
    console.log(`# downloaded ${names.join(", ")}; the panel says: ${(await timingsState(page)).message}`);
    const svg = names.find((n) => n.endsWith(".svg"));
    const png = names.find((n) => n.endsWith(".png"));
    assert.ok(svg && png, `downloads: ${names}`);
    assert.equal(svg, st.chart + ".svg");
    const text = got[svg].toString("utf8");
    assert.ok(text.startsWith("<svg"), text.slice(0, 80));
    assert.match(text, /<title>[^<]+<\/title>/);
    assert.match(text, /browser, WebAssembly/);  // the footer's machine record, as text
    assert.ok((text.match(/<path /g) || []).length >= 20, "an SVG with hardly any marks");
    assert.ok(text.trimEnd().endsWith("</svg>"));
    const p = got[png];
    assert.deepEqual([...p.subarray(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10]);
    assert.deepEqual([p.readUInt32BE(16), p.readUInt32BE(20)], [1920, 1080]);  // 1280 x 720 pt x 1.5
    const s = await lookedAt(p);
    assert.ok(s.colours >= 10 && s.differ > 0.02, `a blank chart PNG: ${JSON.stringify(s)}`);
    writeFileSync(path.join(shots, "timings_chart.png"), p);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test("the GIF export (key E) downloads the steps as an animated GIF", async () => {
  const { page, errors } = await open("/#view=stride&problem=mb1ic1ih6oc1kh3sh2ph1&step=0");
  try {
    await page.click("canvas");
    const got = await downloads(page, [".gif"], () => page.keyboard.press("e"), 120000);
    const name = Object.keys(got).find((n) => n.endsWith(".gif"));
    assert.ok(name, `downloads: ${Object.keys(got)}`);
    const gif = got[name];
    assert.equal(gif.subarray(0, 6).toString("latin1"), "GIF89a");
    const w = gif.readUInt16LE(6), h = gif.readUInt16LE(8);
    // One graphic control extension (21 F9 04: the frame's delay) a frame.
    let count = 0;
    for (let i = 0; i + 2 < gif.length; i++)
      if (gif[i] === 0x21 && gif[i + 1] === 0xf9 && gif[i + 2] === 0x04) count++;
    console.log(`# ${name}: ${w}x${h}, ${count} frames, ${gif.length} bytes`);
    assert.ok(w > 200 && h > 200, `a ${w}x${h} GIF`);
    assert.ok(count >= 2, `${count} frames`);
    assert.ok(gif.includes(Buffer.from("NETSCAPE2.0")), "the GIF does not loop");
    assert.equal(gif[gif.length - 1], 0x3b);  // the trailer: a complete file
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});
