// Screenshots for docs/analysis.md: the report (by section) and a trace in
// speedscope, in Debian's headless Chromium via playwright-core (tests/js).
// Usage: node scripts/report-screenshots.mjs REPORT.html TRACE.json.gz OUTDIR
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const [report, trace, outdir] = process.argv.slice(2);
const modules = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../tests/js/node_modules');
const { chromium } = await import(pathToFileURL(path.join(modules, 'playwright-core/index.mjs')).href);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
fs.mkdirSync(outdir, { recursive: true });
const ctx = await browser.newContext({ offline: true, viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
const page = await ctx.newPage();
await page.goto(pathToFileURL(path.resolve(report)).href);
await page.waitForSelector('body[data-rendered-plots]');
await page.screenshot({ path: path.join(outdir, 'report-overview.png') });
await page.evaluate(() => { document.querySelector('nav').style.position = 'static'; });  // not over the sections
for (const id of ['busbw', 'time', 'stragglers', 'occupancy']) {
  const el = page.locator('#' + id);
  await el.scrollIntoViewIfNeeded();
  await el.screenshot({ path: path.join(outdir, `report-${id}.png`) });
}
// speedscope: the trace handed over as base64, like speedscope's own CLI does
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ni-shots-'));
const js = path.join(tmp, 'load.js');
fs.writeFileSync(js, `speedscope.loadFileFromBase64(${JSON.stringify(path.basename(trace))}, ` +
  `${JSON.stringify(fs.readFileSync(trace).toString('base64'))})`);
const ss = await browser.newPage({ viewport: { width: 1280, height: 560 } });
await ss.goto(pathToFileURL(path.join(modules, 'speedscope/dist/release/index.html')).href + '#localProfilePath=' + js);
for (let i = 0; i < 100 && !(await ss.title()).includes(path.basename(trace)); ++i) await ss.waitForTimeout(100);
await ss.waitForTimeout(500);
await ss.screenshot({ path: path.join(outdir, 'trace-speedscope.png') });
await browser.close();
fs.rmSync(tmp, { recursive: true, force: true });
for (const f of fs.readdirSync(outdir).filter((f) => f.endsWith('.png')))
  console.log(f, fs.statSync(path.join(outdir, f)).size, 'bytes');
