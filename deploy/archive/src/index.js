// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The culpert profile archive: CI baselines for `culpert upload` / `culpert pull`
 * (deploy/archive/README.md).  A Cloudflare Worker; the profiles are blobs in R2 (binding PROFILES), the
 * index is a D1 table (binding DB, migrations/).  It stores what it is sent byte for byte
 * and never parses pprof: it only checks the gzip magic.  README.md documents the API.
 *
 * Bindings: PROFILES (R2), DB (D1), ARCHIVE_TOKEN (secret), MAX_PROFILE_BYTES (var).
 */

// 32 MiB, used when the MAX_PROFILE_BYTES var is absent or not a positive integer
const DEFAULT_MAX_PROFILE_BYTES = 32 * 1024 * 1024;

const SHA_RE = /^[0-9a-fA-F]{7,64}$/;
/*
 * Git allows almost anything in a branch name (GITHUB_REF_NAME passes it on as is), so refuse
 * only what cannot be one: empty, whitespace or control characters, over 255 characters.
 * Projects ("owner/repo") follow the same rule.
 */
const NAME_RE = /^[^\p{Cc}\p{Z}]{1,255}$/u;
const NAME_RULE = "want 1 to 255 characters, no spaces or control characters";

const JSON_TYPE = "application/json; charset=utf-8";

export default {
	async fetch(request, env) {
		try {
			return await route(request, env);
		} catch (err) {
			console.error("culpert-archive:", err && err.stack ? err.stack : err);
			// a deployment whose migration was not applied fails every request alike
			if (/no such table/.test(String(err && err.message)))
				return jsonError(500, "the D1 schema is missing: run " +
					"'wrangler d1 migrations apply culpert-archive --remote'");
			return jsonError(500, "internal error");
		}
	},
};

async function route(request, env)
{
	const url = new URL(request.url);

	if (url.pathname === "/healthz") {
		if (request.method !== "GET" && request.method !== "HEAD")
			return methodNotAllowed("GET, HEAD");
		return json(200, { ok: true });
	}

	const m = /^\/v1\/profiles\/([^/]+)$/.exec(url.pathname);
	if (!m)
		return jsonError(404, "no such endpoint");

	// before any validation, so that a caller without the token learns nothing
	const denied = await authorize(request, env);
	if (denied)
		return denied;

	const scope = projectOf(url);
	if (scope.error)
		return jsonError(400, scope.error);

	if (m[1] === "latest") {
		if (request.method !== "GET")
			return methodNotAllowed("GET");
		return getLatest(env, url, scope.project);
	}

	if (!SHA_RE.test(m[1]))
		return jsonError(400, "invalid sha: want 7 to 64 hexadecimal digits");
	const sha = m[1].toLowerCase();
	if (request.method === "GET")
		return getBySha(env, sha, scope.project);
	if (request.method === "POST")
		return putProfile(request, env, url, sha, scope.project);
	return methodNotAllowed("GET, POST");
}

/* null when the request carries the token; else the 401 (or 500) to answer */
async function authorize(request, env)
{
	const want = env.ARCHIVE_TOKEN;
	// fail closed: a deployment without the secret must not be an open archive
	if (typeof want !== "string" || want === "")
		return jsonError(500, "the ARCHIVE_TOKEN secret is not set: " +
			"run 'wrangler secret put ARCHIVE_TOKEN'");

	const challenge = { "WWW-Authenticate": 'Bearer realm="culpert-archive"' };
	const m = /^Bearer +(\S+) *$/i.exec(request.headers.get("Authorization") || "");
	if (!m)
		return jsonError(401, "missing bearer token: send 'Authorization: Bearer TOKEN'",
			challenge);
	if (!(await tokenEquals(m[1], want)))
		return jsonError(401, "bearer token rejected", challenge);
	return null;
}

/*
 * Constant-time: both sides are hashed first, so the comparison is of two 32-byte digests
 * whatever the lengths, and timingSafeEqual (a Workers extension of WebCrypto) compares them
 * without an early exit.
 */
async function tokenEquals(got, want)
{
	const enc = new TextEncoder();
	const [a, b] = await Promise.all([got, want].map((s) =>
		crypto.subtle.digest("SHA-256", enc.encode(s))));
	return crypto.subtle.timingSafeEqual(a, b);
}

/* ?project=P; absent or empty is the default scope, '' in the index */
function projectOf(url)
{
	const p = url.searchParams.get("project");
	if (p === null || p === "")
		return { project: "" };
	if (!NAME_RE.test(p))
		return { error: `invalid project: ${NAME_RULE}` };
	return { project: p };
}

function branchOf(url)
{
	const b = url.searchParams.get("branch");
	if (b === null || b === "")
		return { error: "missing branch: add ?branch=NAME" };
	if (!NAME_RE.test(b))
		return { error: `invalid branch: ${NAME_RULE}` };
	return { branch: b };
}

/*
 * The key ends in the sha, which has no "/", so no two (project, sha) share one; the project
 * is encoded all the same, to keep each project one level deep in a listing of the bucket.
 */
function blobKey(project, sha)
{
	return project === "" ? `default/${sha}` : `projects/${encodeURIComponent(project)}/${sha}`;
}

function maxProfileBytes(env)
{
	const n = Number(env.MAX_PROFILE_BYTES);
	return Number.isSafeInteger(n) && n > 0 ? n : DEFAULT_MAX_PROFILE_BYTES;
}

async function putProfile(request, env, url, sha, project)
{
	const br = branchOf(url);
	if (br.error)
		return jsonError(400, br.error);

	const max = maxProfileBytes(env);
	const tooLarge = () => jsonError(413, `profile too large: the limit is ${max} bytes`);
	const declared = request.headers.get("Content-Length");
	if (declared !== null && Number(declared) > max)
		return tooLarge();
	// a chunked upload has no Content-Length: count while reading
	const body = await readAtMost(request.body, max);
	if (body === null)
		return tooLarge();
	if (body.length < 2 || body[0] !== 0x1f || body[1] !== 0x8b)
		return jsonError(415, "body is not gzip: upload the .pb.gz profile as it is");

	const sha256 = hex(await crypto.subtle.digest("SHA-256", body));
	const key = blobKey(project, sha);
	const uploadedAt = new Date().toISOString();
	// the blob first: an index row never names a blob that was not written
	await env.PROFILES.put(key, body, {
		sha256,
		httpMetadata: { contentType: "application/octet-stream" },
		customMetadata: { sha, branch: br.branch, project, uploaded_at: uploadedAt },
	});
	const prev = await env.DB.prepare("SELECT 1 FROM profiles WHERE project = ?1 AND sha = ?2")
		.bind(project, sha).first();
	await env.DB.prepare("INSERT OR REPLACE INTO profiles " +
		"(project, sha, branch, r2_key, size, sha256, uploaded_at) " +
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
		.bind(project, sha, br.branch, key, body.length, sha256, uploadedAt).run();

	return json(201, {
		sha,
		branch: br.branch,
		project: project === "" ? null : project,
		size: body.length,
		sha256,
		uploaded_at: uploadedAt,
		replaced: prev !== null,
	}, { Location: profilePath(sha, project) });
}

/* the body as one Uint8Array, or null once it is longer than max bytes */
async function readAtMost(stream, max)
{
	if (!stream)
		return new Uint8Array(0);
	const reader = stream.getReader();
	const chunks = [];
	let n = 0;
	// bounded: every chunk adds at least one byte, and n > max ends the loop
	for (;;) {
		const { done, value } = await reader.read();
		if (done)
			break;
		n += value.byteLength;
		if (n > max) {
			await reader.cancel();
			return null;
		}
		chunks.push(value);
	}
	const body = new Uint8Array(n);
	let off = 0;
	for (const c of chunks) {
		body.set(c, off);
		off += c.byteLength;
	}
	return body;
}

async function getBySha(env, sha, project)
{
	const row = await env.DB.prepare("SELECT sha, r2_key, sha256, uploaded_at FROM profiles " +
		"WHERE project = ?1 AND sha = ?2").bind(project, sha).first();
	if (!row)
		return jsonError(404, `no profile for sha ${sha}${inProject(project)}`);
	return blobResponse(env, row);
}

async function getLatest(env, url, project)
{
	const br = branchOf(url);
	if (br.error)
		return jsonError(400, br.error);
	const row = await env.DB.prepare("SELECT sha, r2_key, sha256, uploaded_at FROM profiles " +
		"WHERE project = ?1 AND branch = ?2 ORDER BY id DESC LIMIT 1")
		.bind(project, br.branch).first();
	if (!row)
		return jsonError(404, `no profile for branch ${br.branch}${inProject(project)}`);
	return blobResponse(env, row);
}

/* the stored bytes as they were uploaded: no Content-Encoding, so no client inflates them */
async function blobResponse(env, row)
{
	const obj = await env.PROFILES.get(row.r2_key);
	if (!obj)
		return jsonError(500, `the index names ${row.r2_key} but storage has no such ` +
			"blob: upload the profile again");
	return new Response(obj.body, {
		status: 200,
		headers: {
			"Content-Type": "application/octet-stream",
			"Content-Length": String(obj.size),
			"Cache-Control": "no-store",
			ETag: obj.httpEtag,
			"X-Culpert-Sha": row.sha,
			"X-Culpert-Sha256": row.sha256,
			"X-Culpert-Uploaded-At": row.uploaded_at,
		},
	});
}

function profilePath(sha, project)
{
	return `/v1/profiles/${sha}` + (project === "" ? "" :
		`?project=${encodeURIComponent(project)}`);
}

function inProject(project)
{
	return project === "" ? "" : ` in project ${project}`;
}

function hex(buf)
{
	return [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function methodNotAllowed(allow)
{
	return jsonError(405, "method not allowed", { Allow: allow });
}

function jsonError(status, message, headers)
{
	return json(status, { error: message }, headers);
}

function json(status, obj, headers)
{
	return new Response(JSON.stringify(obj) + "\n", {
		status,
		headers: { "Content-Type": JSON_TYPE, "Cache-Control": "no-store", ...headers },
	});
}
