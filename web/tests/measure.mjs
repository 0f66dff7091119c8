// Measures the browser build in headless Chromium (SwiftShader's software WebGL): the time from
// navigation to the app's first frame, and the median time of the app's frame function (the
// emscripten main loop's iteration, timed by Module.preMainLoop / postMainLoop) on a view.
// Usage (from web/tests, after npm ci): node measure.mjs [FRAGMENT] [FRAMES]
// Default: the im2col view of mb1ic64ih56oc64kh3ph1, 60 frames. The desktop's figure for the same
// view: convlab shot --view im2col --problem mb1ic64ih56oc64kh3ph1 --frames 60 --report
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import puppeteer from "puppeteer-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const site = process.env.SITE || path.join(root, "build-web/site");
const fragment = process.argv[2] || "#view=im2col&problem=mb1ic64ih56oc64kh3ph1&step=0";
const count = Number(process.argv[3] || 60);

const server = spawn("python3", [path.join(root, "web/serve.py"), site, "--port", "0"],
                     { stdio: ["ignore", "pipe", "inherit"] });
const base = await new Promise((resolve) => server.stdout.once("data", (d) =>
  resolve(/http:\/\/127\.0\.0\.1:\d+\//.exec(String(d))[0])));
const profile = mkdtempSync(path.join(tmpdir(), "convlab-chromium-"));
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true,
  userDataDir: profile, protocolTimeout: 600000,
  args: ["--headless=new", "--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
         "--window-size=1600,1000"],
  defaultViewport: { width: 1600, height: 1000 },
});
try {
  const page = await browser.newPage();
  // The frame hooks are installed before the app starts (Module is defined by index.html).
  await page.evaluateOnNewDocument(() => {
    window.frameTimes = [];
    let t0 = 0;
    Object.defineProperty(window, "Module", {
      configurable: true,
      set(m) {
        // Where the time to the first frame goes (performance.now(): from the navigation): the
        // runtime ready (wasm compiled, convlab.data unpacked), main() up to its frame loop,
        // and the end of the first frame.
        const ready = m.onRuntimeInitialized;
        m.onRuntimeInitialized = () => { window.runtimeReadyMs = performance.now(); ready(); };
        m.preMainLoop = () => {
          t0 = performance.now();
          window.firstFrameStartMs ??= t0;
        };
        m.postMainLoop = () => {
          const t = performance.now();
          window.firstFrameEndMs ??= t;
          window.frameTimes.push(t - t0);
        };
        Object.defineProperty(window, "Module", { value: m, writable: true, configurable: true });
      },
    });
  });
  const t = Date.now();
  await page.goto(base + fragment, { waitUntil: "load" });
  await page.waitForFunction(() => window.convlabReady === true && location.hash.length > 1,
                             { timeout: 300000 });
  const first = Date.now() - t;
  await page.waitForFunction((n) => window.frameTimes.length >= n + 5, { timeout: 600000 }, count);
  const parts = await page.evaluate(() => {
    const res = (name) => performance.getEntriesByType("resource").find((e) => e.name.endsWith(name));
    return { js: res("convlab.js")?.responseEnd, wasm: res("convlab.wasm")?.responseEnd,
             data: res("convlab.data")?.responseEnd, ready: window.runtimeReadyMs,
             start: window.firstFrameStartMs, end: window.firstFrameEndMs };
  });
  const ms = (v) => (v === undefined ? "?" : `${Math.round(v)} ms`);
  console.log(`from the navigation: convlab.js loaded ${ms(parts.js)}, convlab.wasm ` +
              `${ms(parts.wasm)}, convlab.data ${ms(parts.data)}; runtime ready ${ms(parts.ready)}; ` +
              `first frame begun ${ms(parts.start)}, drawn ${ms(parts.end)}`);
  const times = (await page.evaluate(() => window.frameTimes)).slice(5).sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)];
  console.log(`${fragment}: first frame after ${first} ms; frame function median ` +
              `${median.toFixed(1)} ms, max ${times[times.length - 1].toFixed(1)} ms ` +
              `(${times.length} frames, the first 5 left out); ${await page.evaluate(() => navigator.userAgent)}`);
} finally {
  await browser.close();
  server.kill();
  rmSync(profile, { recursive: true, force: true });
}
