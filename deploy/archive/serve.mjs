#!/usr/bin/env node
// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The archive Worker on a loopback port, under miniflare (the real Workers runtime), for
 * tests of its clients.  Run `sh deploy/archive/npm-deps.sh` once first.
 *
 *   ARCHIVE_TOKEN=TOKEN node deploy/archive/serve.mjs --port PORT [--persist DIR] [--max-bytes N]
 *
 *   --port PORT     port on 127.0.0.1 (never another address); 0 picks a free one
 *   --token TOKEN   the bearer token, instead of $ARCHIVE_TOKEN (which keeps it out of ps)
 *   --persist DIR   keep R2 and D1 data in DIR (created if missing, left in place); without,
 *                   a fresh temporary directory, removed when the server stops
 *   --max-bytes N   MAX_PROFILE_BYTES (413 above it); default wrangler.toml's, 32 MiB
 *
 * Once it answers requests it prints one line on stdout:
 *   culpert-archive: listening on http://127.0.0.1:PORT
 * SIGTERM or SIGINT stops it: workerd ends, the temporary directory is removed, exit 0.
 * It cannot start (bad arguments, port in use, no token): "error: ..." on stderr, exit 1.
 * Killed with SIGKILL, a watchdog still ends workerd within moments (see armWatchdog).
 *
 * Shell:
 *   ARCHIVE_TOKEN=secret node deploy/archive/serve.mjs --port 0 >"$TMP/archive.out" &
 *   archive_pid=$!
 *   wait_for "$TMP/archive.out" 'listening on' 30
 *   url=$(sed -n 's/^culpert-archive: listening on //p' "$TMP/archive.out")
 *   ...
 *   kill -TERM "$archive_pid"; wait "$archive_pid"
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { start } from "./lib/local.mjs";

function die(msg)
{
	process.stderr.write(`error: ${msg}\n`);
	process.exit(1);
}

function options()
{
	let v;
	try {
		v = parseArgs({
			options: {
				port: { type: "string" },
				token: { type: "string" },
				persist: { type: "string" },
				"max-bytes": { type: "string" },
			},
		}).values;
	} catch (err) {
		die(`${err.message}; usage: serve.mjs --port PORT [--persist DIR] [--max-bytes N]`);
	}
	if (v.port === undefined || !/^\d+$/.test(v.port) || Number(v.port) > 65535)
		die("--port PORT is required: 0 to 65535");
	const token = v.token ?? process.env.ARCHIVE_TOKEN;
	if (!token)
		die("no token: set ARCHIVE_TOKEN or pass --token");
	if (v["max-bytes"] !== undefined && !/^[1-9]\d*$/.test(v["max-bytes"]))
		die("--max-bytes wants a positive number of bytes");
	return {
		port: Number(v.port),
		token,
		persist: v.persist,
		maxBytes: v["max-bytes"] === undefined ? undefined : Number(v["max-bytes"]),
	};
}

/* the pids of this process's children named workerd (Linux /proc) */
function workerdPids()
{
	const pids = [];
	for (const tid of readdirSync(`/proc/${process.pid}/task`)) {
		const kids = readFileSync(`/proc/${process.pid}/task/${tid}/children`, "utf8");
		for (const p of kids.split(" ").filter(Boolean)) {
			if (readFileSync(`/proc/${p}/comm`, "utf8").trim() === "workerd")
				pids.push(p);
		}
	}
	return pids;
}

/*
 * miniflare ends workerd only when disposed: if this process is killed with SIGKILL (as a
 * test harness's cleanup may do), workerd would live on, holding the port.  The watchdog
 * reads a pipe whose other end only this process holds; the kernel closes it however the
 * process ends, and the watchdog then kills workerd and removes the work directory.  No
 * loop: one blocking read.
 */
function armWatchdog(work)
{
	let pids;
	try {
		pids = workerdPids();
	} catch (err) {
		process.stderr.write(`culpert-archive: no watchdog (${err.message}); ` +
			"stop with SIGTERM, not SIGKILL\n");
		return null;
	}
	const dog = spawn("sh", ["-c", 'read -r _; w=$1; shift; kill -9 "$@"; rm -rf "$w"',
		"watchdog", work, ...pids], { stdio: ["pipe", "ignore", "ignore"] });
	dog.unref();
	dog.stdin.unref?.();
	return dog;
}

async function main()
{
	const opt = options();
	// miniflare's scratch files, and the data unless --persist: all removed at the end
	const work = mkdtempSync(path.join(os.tmpdir(), "culpert-archive-"));
	const data = opt.persist ?? path.join(work, "data");
	mkdirSync(data, { recursive: true });

	let srv;
	try {
		srv = await start({ token: opt.token, maxBytes: opt.maxBytes, port: opt.port,
			persistDir: data, tmpDir: path.join(work, "tmp") });
	} catch (err) {
		rmSync(work, { recursive: true, force: true });
		die(`cannot start the archive on 127.0.0.1:${opt.port}: ${err.message}`);
	}
	const dog = armWatchdog(work);

	let stopping = false;
	const stop = async () => {
		if (stopping)
			return;
		stopping = true;
		await srv.mf.dispose();
		// workerd is gone: disarm the watchdog before its pids can be reused
		dog?.kill("SIGKILL");
		rmSync(work, { recursive: true, force: true });
		process.exit(0);
	};
	/*
	 * miniflare's exit hook answers SIGTERM and SIGINT with process.exit(128 + signal) at once,
	 * without waiting for workerd to end: ours waits, and exits 0.
	 */
	for (const sig of ["SIGTERM", "SIGINT"]) {
		process.removeAllListeners(sig);
		process.on(sig, stop);
	}

	const url = srv.url.href.replace(/\/$/, "");
	process.stderr.write(`culpert-archive: data in ${data}` +
		(opt.persist ? "\n" : " (removed when it stops)\n"));
	process.stdout.write(`culpert-archive: listening on ${url}\n`);
}

main();
