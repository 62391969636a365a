// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The archive Worker under the real Workers runtime (workerd, through miniflare), with the
 * bindings and compatibility date of wrangler.toml: every status the API documents, and the
 * stored bytes read back from R2 and D1 directly.  Run: npm test (in deploy/archive).
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { gzipSync } from "node:zlib";
import { loadConfig, start } from "../lib/local.mjs";

const TOKEN = "test-token-0123456789";
// small, so that the 413 cases send little; wrangler.toml's own value is checked apart
const MAX = 64 * 1024;
const SHA1 = "0123456789abcdef0123456789abcdef01234567";
const SHA2 = "89abcdef0123456789abcdef0123456789abcdef";
const SHA3 = "fedcba9876543210fedcba9876543210fedcba98";

let srv;
let tmp;

before(async () => {
	tmp = mkdtempSync(path.join(os.tmpdir(), "culpert-archive-test-"));
	srv = await start({ token: TOKEN, maxBytes: MAX, tmpDir: tmp });
});

after(async () => {
	await srv?.mf.dispose();
	rmSync(tmp, { recursive: true, force: true });
});

/* a gzip stream like a profile: random content, so it does not compress, every byte value */
function profile(n = 3000)
{
	return gzipSync(Buffer.concat([Buffer.from([...Array(256).keys()]), randomBytes(n)]));
}

function req(pathAndQuery, { method = "GET", token = TOKEN, body, headers = {} } = {})
{
	const h = { ...headers };
	if (token !== null)
		h.Authorization = `Bearer ${token}`;
	return srv.mf.dispatchFetch(new URL(pathAndQuery, srv.url), { method, headers: h, body });
}

function upload(sha, body, query = "branch=main", opts = {})
{
	return req(`/v1/profiles/${sha}?${query}`, { method: "POST", body, ...opts });
}

async function bytes(res)
{
	return Buffer.from(await res.arrayBuffer());
}

/* an error answer: the status, JSON {error: "..."} and nothing else */
async function expectError(res, status, pattern, what = "")
{
	assert.equal(res.status, status, `${what}: status ${res.status}, want ${status}`);
	assert.match(res.headers.get("Content-Type"), /^application\/json/, `${what}: not JSON`);
	const j = await res.json();
	assert.deepEqual(Object.keys(j), ["error"]);
	assert.equal(typeof j.error, "string");
	if (pattern)
		assert.match(j.error, pattern);
	return j;
}

async function expectProfile(res, want, sha)
{
	if (res.status !== 200)
		assert.fail(`status ${res.status}: ${await res.text()}`);
	const h = (name) => res.headers.get(name);
	assert.equal(h("Content-Type"), "application/octet-stream",
		`Content-Type ${h("Content-Type")}`);
	assert.equal(h("Content-Encoding"), null, `Content-Encoding ${h("Content-Encoding")}`);
	assert.equal(h("Content-Length"), String(want.length),
		`Content-Length ${h("Content-Length")}, want ${want.length}`);
	if (sha)
		assert.equal(h("X-Culpert-Sha"), sha,
			`X-Culpert-Sha ${h("X-Culpert-Sha")}, want ${sha}`);
	assert.equal(h("X-Culpert-Sha256"), sha256(want), "X-Culpert-Sha256 is not the upload's");
	assert.ok((await bytes(res)).equals(want), "bytes differ from the upload");
}

function sha256(buf)
{
	return createHash("sha256").update(buf).digest("hex");
}

test("healthz answers without a token", async () => {
	const res = await req("/healthz", { token: null });
	assert.equal(res.status, 200);
	assert.deepEqual(await res.json(), { ok: true });
});

test("upload answers 201 with a receipt; pull by sha gives the same bytes", async () => {
	const p = profile();
	const res = await upload(SHA1, p);
	assert.equal(res.status, 201);
	assert.equal(res.headers.get("Location"), `/v1/profiles/${SHA1}`);
	const r = await res.json();
	assert.equal(r.sha, SHA1);
	assert.equal(r.branch, "main");
	assert.equal(r.project, null);
	assert.equal(r.size, p.length);
	assert.equal(r.sha256, sha256(p));
	assert.equal(r.replaced, false);
	assert.ok(!Number.isNaN(Date.parse(r.uploaded_at)), `uploaded_at ${r.uploaded_at}`);
	await expectProfile(await req(`/v1/profiles/${SHA1}`), p, SHA1);
});

test("the stored blob is the body byte for byte, and the index row says so", async () => {
	const p = profile(5000);
	assert.equal((await upload(SHA2, p, "branch=storage")).status, 201);
	const cfg = loadConfig();
	const obj = await (await srv.mf.getR2Bucket(cfg.r2Binding)).get(`default/${SHA2}`);
	assert.ok(obj, "no R2 object default/SHA");
	assert.ok(Buffer.from(await obj.arrayBuffer()).equals(p));
	const row = await (await srv.mf.getD1Database(cfg.d1Binding))
		.prepare("SELECT * FROM profiles WHERE project = '' AND sha = ?1")
		.bind(SHA2).first();
	assert.equal(row.branch, "storage");
	assert.equal(row.size, p.length);
	assert.equal(row.sha256, sha256(p));
});

test("short and upper-case shas: stored lower-case, found either way", async () => {
	const p = profile();
	const res = await upload("ABCDEF0", p);
	assert.equal(res.status, 201);
	assert.equal((await res.json()).sha, "abcdef0");
	await expectProfile(await req("/v1/profiles/abcdef0"), p, "abcdef0");
	await expectProfile(await req("/v1/profiles/ABCDEF0"), p, "abcdef0");
	// a prefix is not the sha
	await expectError(await req("/v1/profiles/abcdef"), 400);
	const long = "a".repeat(64);
	assert.equal((await upload(long, p)).status, 201);
	await expectProfile(await req(`/v1/profiles/${long}`), p, long);
});

test("a body of any size up to the limit round-trips exactly", async () => {
	// gzip of incompressible data is a little longer than it: fill to exactly MAX bytes
	const base = profile(MAX - 600);
	const p = Buffer.concat([base, Buffer.alloc(MAX - base.length, 0xa5)]);
	assert.equal(p.length, MAX);
	assert.equal((await upload("1111111", p)).status, 201);
	await expectProfile(await req("/v1/profiles/1111111"), p, "1111111");
	// the smallest body that is gzip at all
	const tiny = Buffer.from([0x1f, 0x8b]);
	assert.equal((await upload("2222222", tiny)).status, 201);
	await expectProfile(await req("/v1/profiles/2222222"), tiny, "2222222");
});

test("projects scope profiles: same sha, separate blobs", async () => {
	const plain = profile();
	const acme = profile();
	const sha = "cafe0001";
	assert.equal((await upload(sha, plain)).status, 201);
	const res = await upload(sha, acme, "branch=main&project=acme%2Fweb");
	assert.equal(res.status, 201);
	assert.equal(res.headers.get("Location"), `/v1/profiles/${sha}?project=acme%2Fweb`);
	const r = await res.json();
	assert.equal(r.project, "acme/web");
	assert.equal(r.replaced, false, "an upload in a project replaced the default scope's");
	await expectProfile(await req(`/v1/profiles/${sha}`), plain, sha);
	await expectProfile(await req(`/v1/profiles/${sha}?project=acme%2Fweb`), acme, sha);
	// an empty project is the default scope
	await expectProfile(await req(`/v1/profiles/${sha}?project=`), plain, sha);
	await expectError(await req(`/v1/profiles/${sha}?project=other`), 404,
		/no profile for sha cafe0001 in project other/);
	// a project named as the first part of another stays apart from it
	assert.equal((await upload(sha, profile(), "branch=main&project=acme")).status, 201);
	await expectProfile(await req(`/v1/profiles/${sha}?project=acme%2Fweb`), acme, sha);
});

test("latest: the most recently uploaded of the branch, in its project", async () => {
	const a = profile();
	const b = profile();
	const c = profile();
	const q = "branch=release%2F1.0";
	await expectError(await req(`/v1/profiles/latest?${q}`), 404,
		/no profile for branch release\/1.0/);
	assert.equal((await upload("aaaa0001", a, q)).status, 201);
	await expectProfile(await req(`/v1/profiles/latest?${q}`), a, "aaaa0001");
	assert.equal((await upload("bbbb0002", b, q)).status, 201);
	await expectProfile(await req(`/v1/profiles/latest?${q}`), b, "bbbb0002");
	// another branch and another project do not move it
	assert.equal((await upload("cccc0003", c, "branch=other")).status, 201);
	assert.equal((await upload("dddd0004", c, `${q}&project=acme`)).status, 201);
	await expectProfile(await req(`/v1/profiles/latest?${q}`), b, "bbbb0002");
	await expectProfile(await req(`/v1/profiles/latest?${q}&project=acme`), c, "dddd0004");
	await expectError(await req(`/v1/profiles/latest?${q}&project=nope`), 404);
	// most recently uploaded, not highest sha nor first uploaded: re-uploaded, a is latest
	assert.equal((await upload("aaaa0001", a, q)).status, 201);
	await expectProfile(await req(`/v1/profiles/latest?${q}`), a, "aaaa0001");
});

test("latest orders uploads, not clock ticks: many in a row", async () => {
	// uploads inside one millisecond must still come out in order
	let last;
	for (let i = 0; i < 20; i++) {
		last = profile(100);
		const sha = (0x10000000 + i).toString(16);
		assert.equal((await upload(sha, last, "branch=burst")).status, 201);
	}
	await expectProfile(await req("/v1/profiles/latest?branch=burst"), last,
		(0x10000000 + 19).toString(16));
});

test("re-upload of a sha replaces it, in its project only", async () => {
	const old = profile();
	const neu = profile();
	const sha = "feedf00d";
	assert.equal((await upload(sha, old, "branch=feature")).status, 201);
	assert.equal((await upload(sha, old, "branch=feature&project=p")).status, 201);
	const res = await upload(sha, neu, "branch=main2");
	assert.equal(res.status, 201);
	assert.equal((await res.json()).replaced, true);
	await expectProfile(await req(`/v1/profiles/${sha}`), neu, sha);
	await expectProfile(await req(`/v1/profiles/${sha}?project=p`), old, sha);
	// the replacement moved it to its new branch
	await expectError(await req("/v1/profiles/latest?branch=feature"), 404);
	await expectProfile(await req("/v1/profiles/latest?branch=main2"), neu, sha);
	const n = await (await srv.mf.getD1Database(loadConfig().d1Binding))
		.prepare("SELECT COUNT(*) AS n FROM profiles WHERE sha = ?1").bind(sha).first();
	assert.equal(n.n, 2, "one row per (project, sha)");
});

test("401 without the right bearer token, before anything else is looked at", async () => {
	const p = profile();
	const missing = ["no header", "another scheme", "empty bearer"];
	const cases = [
		["no header", { token: null }],
		["wrong token", { token: "wrong" }],
		["token with one more character", { token: TOKEN + "x" }],
		["token with one less character", { token: TOKEN.slice(0, -1) }],
		["another scheme", { token: null, headers: { Authorization: `Basic ${TOKEN}` } }],
		["empty bearer", { token: null, headers: { Authorization: "Bearer " } }],
	];
	for (const [what, opts] of cases) {
		for (const [p_, o] of [
			[`/v1/profiles/${SHA1}`, {}],
			["/v1/profiles/latest?branch=main", {}],
			[`/v1/profiles/${SHA3}?branch=main`, { method: "POST", body: p }],
			// a bad sha is not reported to whoever has no token
			["/v1/profiles/xyz", {}],
		]) {
			const res = await req(p_, { ...o, ...opts });
			const why = missing.includes(what) ? /missing bearer token/
				: /token rejected/;
			await expectError(res, 401, why, what);
			assert.match(res.headers.get("WWW-Authenticate"), /^Bearer/, what);
		}
	}
	// the upload with a wrong token stored nothing
	await expectError(await req(`/v1/profiles/${SHA3}`), 404);
	// the scheme is case-insensitive (RFC 7235)
	const res = await req(`/v1/profiles/${SHA1}`,
		{ token: null, headers: { Authorization: `bearer ${TOKEN}` } });
	assert.equal(res.status, 200);
	await res.arrayBuffer();
});

test("404 for a sha, branch or endpoint that is not there", async () => {
	await expectError(await req("/v1/profiles/deadbeef"), 404, /no profile for sha deadbeef/);
	await expectError(await req("/v1/profiles/latest?branch=never"), 404,
		/no profile for branch never/);
	await expectError(await req("/v1/nothing"), 404, /no such endpoint/);
	await expectError(await req("/"), 404, /no such endpoint/);
});

test("415 for a body that is not gzip; nothing stored", async () => {
	const bodies = [
		["a pprof protobuf, not gzipped", Buffer.from([0x0a, 0x04, 0x08, 0x01, 0x10])],
		["text", Buffer.from("hello, world\n")],
		["empty", Buffer.alloc(0)],
		["one byte of the magic", Buffer.from([0x1f])],
		["magic bytes swapped", Buffer.from([0x8b, 0x1f, 0x08, 0x00])],
	];
	for (const [what, body] of bodies)
		await expectError(await upload("eeee0001", body), 415, /not gzip/, what);
	const res = await upload("eeee0001", null);
	await expectError(res, 415, /not gzip/);
	await expectError(await req("/v1/profiles/eeee0001"), 404);
});

test("413 over MAX_PROFILE_BYTES, declared or streamed; nothing stored", async () => {
	const p = profile(MAX);
	assert.ok(p.length > MAX);
	await expectError(await upload("ffff0001", p), 413, new RegExp(`limit is ${MAX} bytes`));
	// no Content-Length (chunked): counted while read
	const chunk = Buffer.concat([Buffer.from([0x1f, 0x8b]), Buffer.alloc(16 * 1024 - 2)]);
	let sent = 0;
	const stream = new ReadableStream({
		pull(ctl) {
			if (sent > MAX + chunk.length)
				return ctl.close();
			ctl.enqueue(new Uint8Array(chunk));
			sent += chunk.length;
		},
	});
	const res = await srv.mf.dispatchFetch(
		new URL("/v1/profiles/ffff0001?branch=main", srv.url),
		{ method: "POST", headers: { Authorization: `Bearer ${TOKEN}` }, body: stream,
			duplex: "half" });
	await expectError(res, 413);
	await expectError(await req("/v1/profiles/ffff0001"), 404);
});

test("400 for a bad sha, branch or project", async () => {
	const p = profile();
	const bad = ["abc123", "a".repeat(65), "0123456g", "012345 7", "-1234567", "latest1"];
	for (const sha of bad) {
		await expectError(await upload(sha, p), 400, /invalid sha/, sha);
		await expectError(await req(`/v1/profiles/${sha}`), 400, /invalid sha/, sha);
	}
	await expectError(await upload(SHA3, p, ""), 400, /missing branch/);
	await expectError(await upload(SHA3, p, "branch="), 400, /missing branch/);
	await expectError(await upload(SHA3, p, "branch=a%20b"), 400, /invalid branch/);
	await expectError(await upload(SHA3, p, "branch=a%0Ab"), 400, /invalid branch/);
	await expectError(await upload(SHA3, p, `branch=${"b".repeat(256)}`), 400,
		/invalid branch/);
	await expectError(await upload(SHA3, p, "branch=main&project=a%09b"), 400,
		/invalid project/);
	await expectError(await req("/v1/profiles/latest"), 400, /missing branch/);
	await expectError(await req("/v1/profiles/latest?branch=x%00"), 400, /invalid branch/);
	await expectError(await req(`/v1/profiles/${SHA3}`), 404);
	// what git allows in a branch name passes
	const ok = await upload(SHA3, p, `branch=${encodeURIComponent("feat/ünïcode-1.2_x")}`);
	assert.equal(ok.status, 201);
	assert.equal((await ok.json()).branch, "feat/ünïcode-1.2_x");
});

test("405 for methods the endpoints do not take", async () => {
	for (const [method, p_, allow] of [
		["PUT", `/v1/profiles/${SHA1}?branch=main`, "GET, POST"],
		["DELETE", `/v1/profiles/${SHA1}`, "GET, POST"],
		["POST", "/v1/profiles/latest?branch=main", "GET"],
		["POST", "/healthz", "GET, HEAD"],
	]) {
		const body = method === "DELETE" ? undefined : profile();
		const res = await req(p_, { method, body });
		await expectError(res, 405);
		assert.equal(res.headers.get("Allow"), allow);
	}
});

test("without an override, the limit is wrangler.toml's MAX_PROFILE_BYTES", async () => {
	const limit = Number(loadConfig().vars.MAX_PROFILE_BYTES);
	assert.ok(limit > MAX, `MAX_PROFILE_BYTES ${limit}`);
	const tmp2 = mkdtempSync(path.join(os.tmpdir(), "culpert-archive-test-"));
	const dflt = await start({ token: TOKEN, tmpDir: tmp2 });
	try {
		const post = (body) => dflt.mf.dispatchFetch(
			new URL(`/v1/profiles/${SHA1}?branch=main`, dflt.url),
			{ method: "POST", headers: { Authorization: `Bearer ${TOKEN}` }, body });
		const big = Buffer.alloc(limit + 1);
		big[0] = 0x1f;
		big[1] = 0x8b;
		await expectError(await post(big), 413, new RegExp(`limit is ${limit} bytes`));
		const res = await post(big.subarray(0, limit));
		assert.equal(res.status, 201);
		assert.equal((await res.json()).size, limit);
	} finally {
		await dflt.mf.dispose();
		rmSync(tmp2, { recursive: true, force: true });
	}
});

test("without the ARCHIVE_TOKEN secret it refuses everything but healthz", async () => {
	const tmp2 = mkdtempSync(path.join(os.tmpdir(), "culpert-archive-test-"));
	const open = await start({ tmpDir: tmp2 });
	try {
		for (const token of ["", "anything"]) {
			const res = await open.mf.dispatchFetch(
				new URL(`/v1/profiles/${SHA1}`, open.url),
				{ headers: { Authorization: `Bearer ${token}` } });
			await expectError(res, 500, /ARCHIVE_TOKEN secret is not set/);
		}
		const health = await open.mf.dispatchFetch(new URL("/healthz", open.url));
		assert.equal(health.status, 200);
	} finally {
		await open.mf.dispose();
		rmSync(tmp2, { recursive: true, force: true });
	}
});
