// Browser tests of the WebAssembly build (web/build.sh): Debian's Chromium, headless with
// software WebGL (SwiftShader), driven through puppeteer-core against the site served on
// 127.0.0.1 by web/serve.py. Run by `./test.sh --web` (or `npm test` here, SITE=dir optional).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import puppeteer from "puppeteer-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const site = process.env.SITE || path.join(root, "build-web/site");
const shots = process.env.SHOTS || path.join(root, "build-web/shots");
const chromium = process.env.CHROMIUM || "/usr/bin/chromium";

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
  [server, base] = await startServer();
  profile = mkdtempSync(path.join(tmpdir(), "convlab-chromium-"));
  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    userDataDir: profile,
    args: ["--headless=new", "--no-sandbox", "--use-angle=swiftshader",
           "--enable-unsafe-swiftshader", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run",
           "--window-size=1600,1000"],
    defaultViewport: { width: 1600, height: 1000 },
  });
  mkdirSync(shots, { recursive: true });
});

after(async () => {
  if (browser) await browser.close();
  if (server) server.kill();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

// Opens the page at `fragment`, collecting console errors and page errors; resolves once the
// app's runtime is up and its fragment shows a place (the first frame has been drawn then).
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

// The screenshot's colour statistics, computed in the page from the PNG: distinct colours
// (quantised to 4 bits a channel) and the share of pixels unlike the top-left one.
async function shotStats(page, name) {
  const png = await page.screenshot({ type: "png" });
  writeFileSync(path.join(shots, name + ".png"), png);
  return page.evaluate(async (b64) => {
    const img = new Image();
    img.src = "data:image/png;base64," + b64;
    await img.decode();
    const c = document.createElement("canvas");
    c.width = img.width; c.height = img.height;
    const g = c.getContext("2d");
    g.drawImage(img, 0, 0);
    const d = g.getImageData(0, 0, c.width, c.height).data;
    const colours = new Set();
    let differ = 0;
    for (let i = 0; i < d.length; i += 4) {
      colours.add((d[i] >> 4) << 8 | (d[i + 1] >> 4) << 4 | d[i + 2] >> 4);
      if (Math.abs(d[i] - d[0]) + Math.abs(d[i + 1] - d[1]) + Math.abs(d[i + 2] - d[2]) > 30)
        differ++;
    }
    return { colours: colours.size, differ: differ / (d.length / 4) };
  }, Buffer.from(png).toString("base64"));
}

const hash = (page) => page.evaluate(() => location.hash);
const frames = (page, n) => page.evaluate((k) => new Promise((r) => {
  const f = () => (--k <= 0 ? r() : requestAnimationFrame(f)); requestAnimationFrame(f);
}), n);

test("the page loads without console errors and draws lesson 1, step 1", async () => {
  const { page, errors, firstFrameMs } = await open("/");
  await frames(page, 5);
  console.log(`# first frame after ${firstFrameMs} ms`);
  assert.equal(await hash(page), "#lesson=1&step=1");
  const s = await shotStats(page, "lesson01_step1");
  // A blank canvas has one colour; the lesson's panels, values and narration have many.
  assert.ok(s.colours >= 20, `only ${s.colours} colours on the page`);
  assert.ok(s.differ > 0.05, `only ${(100 * s.differ).toFixed(1)}% of the page drawn`);
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

test("a view's link opens that view on that step", async () => {
  // Step 7 exists at element granularity (a step past the view's last would be clamped).
  const link = "#view=stride&problem=mb1ic1ih6oc1kh3sh2ph1&step=7&granularity=element";
  const { page, errors } = await open("/" + link);
  await frames(page, 5);
  assert.match(await hash(page), /^#view=stride&problem=[^&]+&step=7&granularity=element$/);
  const s = await shotStats(page, "view_stride_step7");
  assert.ok(s.colours >= 10, `only ${s.colours} colours on the page`);
  assert.deepEqual(errors, []);
  await page.close();
});

test("lesson 14 and the fractal view render (screenshots for a person to look at)", async () => {
  for (const [fragment, name] of [["#lesson=14&step=1", "lesson14_step1"],
                                  ["#view=fractal&problem=mb1ic16ih4oc16kh3ph1&step=3",
                                   "view_fractal_step3"]]) {
    const { page, errors } = await open("/" + fragment);
    await frames(page, 5);
    const s = await shotStats(page, name);
    assert.ok(s.colours >= 10, `${name}: only ${s.colours} colours`);
    assert.deepEqual(errors, [], name);
    await page.close();
  }
});
