// Renders a trace in speedscope (npm, pinned in tests/js/package.json) inside
// Debian's headless Chromium driven by playwright-core, as speedscope's own CLI
// does (a script that hands the file to the app as base64). Prints JSON:
// {title, imported, errors, warnings} and writes a screenshot. Usage:
//   node speedscope.mjs NODE_MODULES_DIR trace.json[.gz] screenshot.png
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, trace, png] = process.argv.slice(2);
const { chromium } = await import(pathToFileURL(path.join(modules, 'playwright-core/index.mjs')).href);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ni-speedscope-'));
const js = path.join(tmp, 'load.js');
fs.writeFileSync(js, `speedscope.loadFileFromBase64(${JSON.stringify(path.basename(trace))}, ` +
  `${JSON.stringify(fs.readFileSync(trace).toString('base64'))})`);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
const log = [];
page.on('console', (m) => log.push(m.text()));
page.on('pageerror', (e) => log.push('pageerror ' + e.message));
const index = path.join(modules, 'speedscope/dist/release/index.html');
await page.goto(pathToFileURL(index).href + '#localProfilePath=' + js);
let title = '';
for (let i = 0; i < 100; ++i) {  // up to 10 s for the import
  title = await page.title();
  if (title.includes(path.basename(trace)) || log.some((l) => /Failed|pageerror/.test(l))) break;
  await page.waitForTimeout(100);
}
await page.waitForTimeout(500);
if (png) await page.screenshot({ path: png });
await browser.close();
fs.rmSync(tmp, { recursive: true, force: true });
const clean = log.filter((l) => !/WebGL|GL Driver|GPU stall|GroupMarkerNotSet|Automatic fallback/.test(l));
console.log(JSON.stringify({
  title,
  imported: clean.some((l) => /Importing as Trace Event Format/.test(l)),
  errors: clean.filter((l) => /error|Failed/i.test(l)),
  warnings: clean.filter((l) => /warn|Tried to end/i.test(l)),
  log: clean,
}));
