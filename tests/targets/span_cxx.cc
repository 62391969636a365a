// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The header from C++17: RAII spans, explicit parents.  Same protocol as span_abc. */
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include <culpert/span.h>
#include "ready.h"

#define MiB (1024UL * 1024)

static volatile unsigned long sink;

__attribute__((noipa)) static void alloc_bytes(unsigned long total)
{
	for (unsigned long done = 0; done < total; done += 4096) {
		char *p = static_cast<char *>(std::malloc(4096));

		sink += reinterpret_cast<unsigned long>(p);
		std::free(p);
	}
}

int main()
{

	ready_then_wait(stdout);
	{
		culpert::Span req("cxx_request");
		{
			/* a name that is not NUL-terminated and dies after the span starts */
			std::string *name = new std::string("cxx_stage_2XXXX");
			culpert::Span stage(std::string_view(name->data(), 11));

			delete name;
			alloc_bytes(2 * MiB);
			{
				/* opened inside stage, its parent named explicitly: req */
				culpert::Span child("cxx_child", req.id());

				alloc_bytes(1 * MiB);
			}
		}
	}
	std::printf("total cxx_request;cxx_stage_2 %lu\n", 2 * MiB);
	/* the path is the spans open on the thread; the parent is the named one */
	std::printf("total cxx_request;cxx_stage_2;cxx_child %lu\n", 1 * MiB);
	return 0;
}
