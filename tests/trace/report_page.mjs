// Opens a report in Debian's headless Chromium (playwright-core) with every
// network request blocked and counted, and prints JSON: the requests attempted
// (anything but the file itself; data: URLs are listed apart, they never leave
// the page), console errors and warnings, page errors, and per chart what the
// C++ side wrote (type, expected data points) and what Plotly holds and drew
// (data points, traces, SVG marks). Writes a full-page screenshot. Usage:
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
const requests = [], data_urls = [], errors = [];
const note = (u) => {
  if (u === url) return;
  if (u.startsWith('data:')) { if (data_urls.length < 20) data_urls.push(u.slice(0, 40)); return; }
  requests.push(u);
};
await context.route('**/*', (route) => {
  const u = route.request().url();
  if (u === url) return route.continue();
  note(u);
  return route.abort();
});
const page = await context.newPage();
// Requests the router does not see (service workers, prefetch) still pass here.
page.on('request', (r) => { if (!requests.includes(r.url())) note(r.url()); });
page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') errors.push(m.type() + ': ' + m.text()); });
page.on('pageerror', (e) => errors.push('pageerror: ' + e.message));
const t0 = Date.now();
await page.goto(url, { waitUntil: 'load' });
await page.waitForSelector('body[data-rendered-plots]', { timeout: 60000 }).catch(() => {});
const render_ms = Date.now() - t0;
const result = await page.evaluate(() => {
  const data = JSON.parse(document.getElementById('ni-data').textContent);
  return {
    title: document.title,
    plotly_version: typeof Plotly === 'object' ? Plotly.version : null,
    expected: data.expected_plots,
    expected_points: data.expected_points,
    rendered: Number(document.body.getAttribute('data-rendered-plots') || -1),
    plotly_divs: document.querySelectorAll('.js-plotly-plot').length,
    plots: [...document.querySelectorAll('.plot')].map((d) => {
      const gd = d.querySelector('.js-plotly-plot');
      return {
        type: d.getAttribute('data-type'), title: d.querySelector('h3')?.textContent,
        expected: Number(d.getAttribute('data-expected')), points: Number(d.getAttribute('data-points')),
        marks: Number(d.getAttribute('data-marks')), traces: gd && gd.data ? gd.data.length : 0,
        svg: gd ? gd.querySelectorAll('svg.main-svg').length : 0,
      };
    }),
    tables: document.querySelectorAll('table').length,
    sections: [...document.querySelectorAll('section')].map((s) => s.id),
    modebar_links: document.querySelectorAll('.modebar a[href]').length,
  };
});
if (png) await page.screenshot({ path: png, fullPage: !width });
await browser.close();
console.log(JSON.stringify({ ...result, render_ms, requests, data_urls, errors }));
