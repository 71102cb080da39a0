// Opens a report in Debian's headless Chromium (playwright-core) with the
// network blocked, and prints JSON: requests other than the file itself,
// console errors, the plots (with how many data marks each drew), the number
// the page expected, and writes a full-page screenshot. Usage:
//   node report_page.mjs NODE_MODULES_DIR report.html screenshot.png [width]
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, report, png, width] = process.argv.slice(2);
const { chromium } = await import(pathToFileURL(path.join(modules, 'playwright-core/index.mjs')).href);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const context = await browser.newContext({ offline: true, viewport: { width: Number(width || 1280), height: 800 } });
const url = pathToFileURL(path.resolve(report)).href;
const requests = [], errors = [];
await context.route('**/*', (route) => {
  const u = route.request().url();
  if (u === url) return route.continue();
  requests.push(u);
  return route.abort();
});
const page = await context.newPage();
page.on('request', (r) => { if (r.url() !== url && !requests.includes(r.url())) requests.push(r.url()); });
page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') errors.push(m.type() + ': ' + m.text()); });
page.on('pageerror', (e) => errors.push('pageerror: ' + e.message));
await page.goto(url, { waitUntil: 'load' });
await page.waitForSelector('body[data-rendered-plots]', { timeout: 10000 }).catch(() => {});
const result = await page.evaluate(() => {
  const data = JSON.parse(document.getElementById('ni-data').textContent);
  return {
    title: document.title,
    expected: data.expected_plots,
    rendered: Number(document.body.getAttribute('data-rendered-plots') || -1),
    plots: [...document.querySelectorAll('.plot')].map((d) => ({
      type: d.getAttribute('data-type'), title: d.querySelector('h3')?.textContent,
      marks: Number(d.getAttribute('data-marks')), svg: d.querySelectorAll('svg').length })),
    tables: document.querySelectorAll('table').length,
    sections: [...document.querySelectorAll('section')].map((s) => s.id),
  };
});
if (png) await page.screenshot({ path: png, fullPage: !width });
await browser.close();
console.log(JSON.stringify({ ...result, requests, errors }));
