// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// An empty compiler_builtins for the aarch64 compile check of the probe sites: probes.rs
// calls nothing it would provide (docs/spans.md).
#![feature(compiler_builtins)]
#![compiler_builtins]
#![no_std]
