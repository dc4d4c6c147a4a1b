/*
 * base/version: what this binary is, set at build time by tools/version.sh (the Makefile's
 * VERSION, git, SOURCE_DATE_EPOCH), for `kapi --version` and /version.
 */
#ifndef KAPI_BASE_VERSION_H
#define KAPI_BASE_VERSION_H

/* The Kubernetes release whose API kapi serves, as /version's major, minor and
 * gitVersion give it. */
#define KAPI_KUBE_MAJOR "1"
#define KAPI_KUBE_MINOR "26"
#define KAPI_KUBE_VERSION "v1.26.0"

/* The compiler and platform (GOOS/GOARCH words) this binary was built with and for. */
#ifdef __clang__
#define KAPI_COMPILER "clang"
#else
#define KAPI_COMPILER "gcc"
#endif
#if defined(__x86_64__)
#define KAPI_PLATFORM "linux/amd64"
#elif defined(__aarch64__)
#define KAPI_PLATFORM "linux/arm64"
#elif defined(__arm__)
#define KAPI_PLATFORM "linux/arm"
#elif defined(__i386__)
#define KAPI_PLATFORM "linux/386"
#else
#define KAPI_PLATFORM "linux/unknown"
#endif

/* kapi's own version (the Makefile's VERSION). */
extern const char kapi_version[];
/* The git commit built, its full hash; empty outside a git checkout. */
extern const char kapi_git_commit[];
/* "clean", "dirty" (uncommitted changes), or empty outside a git checkout. */
extern const char kapi_git_tree_state[];
/* When it was built, RFC 3339 in UTC ("2026-11-26T17:20:00Z"). */
extern const char kapi_build_date[];

#endif
