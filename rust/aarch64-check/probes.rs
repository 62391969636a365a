// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// The crate the aarch64 compile check builds: culpert-tracing's probe sites alone, on core
// (docs/spans.md).
#![no_std]
#[path = "../culpert-tracing/src/probes.rs"]
pub mod probes;
