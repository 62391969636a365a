// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * HOG_BYTES of initial-exec TLS: dlopen'd, it takes that much of glibc's
 * static TLS surplus, or fails to load (sampler_late tls).
 */
__thread char sampler_tls_hog[HOG_BYTES] __attribute__((tls_model("initial-exec")));

char *sampler_tls_hog_addr(void);

char *sampler_tls_hog_addr(void)
{
	return sampler_tls_hog;
}
