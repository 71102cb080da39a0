// Side-by-side reference for bench_summary: the same aggregation as `nccl-inspector summary`
// with DuckDB's read_ndjson on the same dump, in records/s.
// Usage: node tests/analysis/duckdb_bench.cjs DUMP_DIR [NODE_MODULES=tests/js/node_modules] [THREADS=2]
// Setup: npm install --prefix tests/js @duckdb/node-api   (tests/js/node_modules is git-ignored)
const path = require('path');
const dir = process.argv[2];
const nm = process.argv[3] || path.join(__dirname, '..', 'js', 'node_modules');
const threads = Number(process.argv[4] || 2);
let duck;
try {
  duck = require(path.resolve(nm, '@duckdb/node-api'));
} catch (e) {
  console.error(`@duckdb/node-api not found under ${nm}: npm install --prefix tests/js @duckdb/node-api`);
  process.exit(77);
}
(async () => {
  const con = await (await duck.DuckDBInstance.create(':memory:')).connect();
  await con.run(`SET threads=${threads}`);
  const t0 = Date.now();
  const c0 = process.cpuUsage();  // DuckDB's threads run inside this process
  const r = await con.runAndReadAll(`select comm_hash, func, algo, proto, floor(log2(bytes))::int b, count(*) n,
      sum(bytes), quantile_cont(dur_us,[0.5,0.9,0.99]), max(dur_us), quantile_cont(busbw_gbs,[0.5,0.1]), min(busbw_gbs)
    from read_ndjson('${dir}/**/*.jsonl.gz', ignore_errors=true, columns={type:'VARCHAR',comm_hash:'VARCHAR',
      func:'VARCHAR',algo:'VARCHAR',proto:'VARCHAR',bytes:'UBIGINT',dur_us:'DOUBLE',busbw_gbs:'DOUBLE'})
    where type in ('coll','p2p','ce') group by all`);
  const s = (Date.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  const cpu = (c.user + c.system) / 1e6;
  const rows = r.getRows().reduce((a, x) => a + Number(x[5]), 0);
  console.log(`duckdb read_ndjson, ${threads} thread(s): ${rows} ops in ${s.toFixed(3)} s = ` +
              `${(rows / s / 1e6).toFixed(2)} M records/s, ${r.getRows().length} groups; ` +
              `${cpu.toFixed(3)} CPU-s = ${(rows / cpu / 1e6).toFixed(2)} M records per CPU-second`);
})();
