// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Worker under miniflare (the real Workers runtime, workerd), configured from
 * wrangler.toml so that the tests and serve.mjs run what `wrangler deploy` deploys.
 * Shared by test/worker.test.mjs and serve.mjs.
 */
import { mkdirSync, readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/*
 * The subset of TOML that wrangler.toml uses: [table], [[array of tables]], key = "string",
 * number or boolean, # comments.  Anything else is an error, not a guess.
 */
export function parseWranglerToml(text)
{
	const top = {};
	const keyValue = /^([\w-]+)\s*=\s*("(?:[^"\\]|\\.)*"|-?\d+|true|false)\s*(#.*)?$/;
	let cur = top;
	text.split("\n").forEach((raw, i) => {
		const line = raw.replace(/^\s+|\s+$/g, "");
		if (line === "" || line.startsWith("#"))
			return;
		let m;
		if ((m = /^\[\[([\w.-]+)\]\]$/.exec(line))) {
			(top[m[1]] ??= []).push((cur = {}));
		} else if ((m = /^\[([\w.-]+)\]$/.exec(line))) {
			cur = top[m[1]] ??= {};
		} else if ((m = keyValue.exec(line))) {
			cur[m[1]] = JSON.parse(m[2]);
		} else {
			throw new Error(`wrangler.toml:${i + 1}: not understood: ${raw}`);
		}
	});
	return top;
}

export function loadConfig()
{
	const toml = parseWranglerToml(readFileSync(path.join(ROOT, "wrangler.toml"), "utf8"));
	const r2 = toml.r2_buckets?.[0];
	const d1 = toml.d1_databases?.[0];
	if (!toml.main || !toml.compatibility_date || !r2?.binding || !d1?.binding)
		throw new Error("wrangler.toml: want main, compatibility_date, " +
			"one R2 and one D1 binding");
	return {
		main: path.join(ROOT, toml.main),
		compatibilityDate: toml.compatibility_date,
		r2Binding: r2.binding,
		d1Binding: d1.binding,
		migrationsDir: path.join(ROOT, d1.migrations_dir ?? "migrations"),
		vars: toml.vars ?? {},
	};
}

/*
 * start(opts): a Miniflare running the Worker on 127.0.0.1, the schema applied.
 *   token      ARCHIVE_TOKEN (omit to run without the secret)
 *   maxBytes   MAX_PROFILE_BYTES, overriding wrangler.toml's
 *   port       listening port; 0 for any free one (the default)
 *   persistDir R2 and D1 data kept in this directory; in memory when absent
 *   tmpDir     where miniflare puts its scratch files (default: a new directory in
 *              os.tmpdir()); the caller removes it after dispose()
 */
export async function start({ token, maxBytes, port = 0, persistDir, tmpDir } = {})
{
	const cfg = loadConfig();
	const bindings = { ...cfg.vars };
	if (token !== undefined)
		bindings.ARCHIVE_TOKEN = token;
	if (maxBytes !== undefined)
		bindings.MAX_PROFILE_BYTES = String(maxBytes);
	const mf = withTmpdir(tmpDir, () => new Miniflare({
		// module names are paths relative to modulesRoot (default: the working directory),
		// and workerd refuses a name that starts with ".."
		modulesRoot: ROOT,
		modules: true,
		scriptPath: cfg.main,
		compatibilityDate: cfg.compatibilityDate,
		bindings,
		r2Buckets: [cfg.r2Binding],
		d1Databases: [cfg.d1Binding],
		// loopback only, whatever the caller asks
		host: "127.0.0.1",
		port,
		r2Persist: persistDir ? path.join(persistDir, "r2") : false,
		d1Persist: persistDir ? path.join(persistDir, "d1") : false,
	}));
	try {
		const url = await mf.ready;
		await migrate(await mf.getD1Database(cfg.d1Binding), cfg.migrationsDir);
		return { mf, url, cfg };
	} catch (err) {
		await mf.dispose();
		throw err;
	}
}

/*
 * Miniflare's constructor makes its scratch directory in os.tmpdir() and dispose() removes
 * it without waiting, so a process that exits right after leaves it behind.  It reads TMPDIR
 * only there; pointing it at a directory of the caller's lets the caller remove it.
 */
function withTmpdir(dir, fn)
{
	if (dir === undefined)
		return fn();
	mkdirSync(dir, { recursive: true });
	const saved = process.env.TMPDIR;
	process.env.TMPDIR = dir;
	try {
		return fn();
	} finally {
		if (saved === undefined)
			delete process.env.TMPDIR;
		else
			process.env.TMPDIR = saved;
	}
}

/*
 * What `wrangler d1 migrations apply` does: each migrations/*.sql not yet listed in the
 * d1_migrations table, in name order, in one batch (a transaction) with its record.
 */
export async function migrate(db, dir)
{
	await db.prepare("CREATE TABLE IF NOT EXISTS d1_migrations (" +
		"id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE, " +
		"applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)").run();
	const done = new Set((await db.prepare("SELECT name FROM d1_migrations").all())
		.results.map((r) => r.name));
	const files = readdirSync(dir).filter((f) => f.endsWith(".sql")).sort();
	for (const f of files) {
		if (done.has(f))
			continue;
		const sql = readFileSync(path.join(dir, f), "utf8");
		const stmts = splitSql(sql).map((s) => db.prepare(s));
		stmts.push(db.prepare("INSERT INTO d1_migrations (name) VALUES (?1)").bind(f));
		await db.batch(stmts);
	}
}

/* statements of a migration: "--" comments dropped, split at ";" (none is inside a string) */
function splitSql(text)
{
	return text.split("\n").map((l) => l.replace(/--.*$/, "")).join("\n")
		.split(";").map((s) => s.trim()).filter((s) => s !== "");
}
