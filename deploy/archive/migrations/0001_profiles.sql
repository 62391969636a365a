-- SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
-- The archive's index: one row per profile, the blob itself in R2 at r2_key.
-- Applied by `wrangler d1 migrations apply`, and by lib/local.mjs under miniflare.

CREATE TABLE IF NOT EXISTS profiles (
	-- upload order: the latest of a branch is its highest id.  AUTOINCREMENT so that an id
	-- is never reused, and a re-upload (INSERT OR REPLACE) gets a new, highest one
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	-- '' is the default scope, when an upload names no project
	project TEXT NOT NULL,
	-- lowercase hex, 7 to 64 digits
	sha TEXT NOT NULL,
	branch TEXT NOT NULL,
	r2_key TEXT NOT NULL,
	size INTEGER NOT NULL,
	-- of the stored bytes, lowercase hex
	sha256 TEXT NOT NULL,
	-- ISO 8601, UTC
	uploaded_at TEXT NOT NULL,
	UNIQUE (project, sha)
);

-- GET /v1/profiles/latest?branch=B: the highest id of (project, branch)
CREATE INDEX IF NOT EXISTS profiles_by_branch ON profiles (project, branch, id);
