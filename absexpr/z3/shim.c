// C shims over Z3's C API, resolved with dlsym. See shim.h.
//
// Error handling: Z3 calls the context's error handler synchronously, on the
// calling thread, whenever an API call fails; the default handler exits the
// process. mz_on_error replaces it and records the code in a thread-local
// slot. Every shim clears the slot, makes its Z3 call(s) and returns the slot
// within one cgo call, so one OS thread serves the whole exchange.

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "shim.h"

typedef void mz_error_handler(Z3_context c, int e);

static struct {
	void (*get_version)(unsigned *, unsigned *, unsigned *, unsigned *);
	Z3_config (*mk_config)(void);
	void (*del_config)(Z3_config);
	void (*set_param_value)(Z3_config, const char *, const char *);
	Z3_context (*mk_context_rc)(Z3_config);
	void (*del_context)(Z3_context);
	void (*set_error_handler)(Z3_context, mz_error_handler *);
	const char *(*get_error_msg)(Z3_context, int);
	void (*interrupt)(Z3_context);
	void (*inc_ref)(Z3_context, Z3_ast);
	void (*dec_ref)(Z3_context, Z3_ast);
	Z3_symbol (*mk_string_symbol)(Z3_context, const char *);
	Z3_sort (*mk_uninterpreted_sort)(Z3_context, Z3_symbol);
	Z3_sort (*mk_int_sort)(Z3_context);
	Z3_sort (*mk_real_sort)(Z3_context);
	Z3_sort (*mk_bool_sort)(Z3_context);
	Z3_ast (*sort_to_ast)(Z3_context, Z3_sort);
	Z3_func_decl (*mk_func_decl)(Z3_context, Z3_symbol, unsigned, Z3_sort const *, Z3_sort);
	Z3_ast (*func_decl_to_ast)(Z3_context, Z3_func_decl);
	Z3_ast (*mk_const)(Z3_context, Z3_symbol, Z3_sort);
	Z3_ast (*mk_app)(Z3_context, Z3_func_decl, unsigned, Z3_ast const *);
	Z3_ast (*mk_numeral)(Z3_context, const char *, Z3_sort);
	Z3_ast (*mk_true)(Z3_context);
	Z3_ast (*mk_eq)(Z3_context, Z3_ast, Z3_ast);
	Z3_ast (*mk_not)(Z3_context, Z3_ast);
	Z3_ast (*mk_implies)(Z3_context, Z3_ast, Z3_ast);
	Z3_ast (*mk_and)(Z3_context, unsigned, Z3_ast const *);
	Z3_ast (*mk_lt)(Z3_context, Z3_ast, Z3_ast);
	Z3_ast (*mk_le)(Z3_context, Z3_ast, Z3_ast);
	Z3_ast (*mk_mul)(Z3_context, unsigned, Z3_ast const *);
	Z3_ast (*mk_div)(Z3_context, Z3_ast, Z3_ast);
	Z3_ast (*mk_mod)(Z3_context, Z3_ast, Z3_ast);
	Z3_app (*to_app)(Z3_context, Z3_ast);
	Z3_pattern (*mk_pattern)(Z3_context, unsigned, Z3_ast const *);
	Z3_ast (*pattern_to_ast)(Z3_context, Z3_pattern);
	Z3_ast (*mk_forall_const)(Z3_context, unsigned, unsigned, Z3_app const *, unsigned,
	                          Z3_pattern const *, Z3_ast);
	const char *(*ast_to_string)(Z3_context, Z3_ast);
	Z3_solver (*mk_solver)(Z3_context);
	void (*solver_inc_ref)(Z3_context, Z3_solver);
	void (*solver_dec_ref)(Z3_context, Z3_solver);
	Z3_params (*mk_params)(Z3_context);
	void (*params_inc_ref)(Z3_context, Z3_params);
	void (*params_dec_ref)(Z3_context, Z3_params);
	void (*params_set_uint)(Z3_context, Z3_params, Z3_symbol, unsigned);
	void (*params_set_bool)(Z3_context, Z3_params, Z3_symbol, bool);
	void (*solver_set_params)(Z3_context, Z3_solver, Z3_params);
	void (*solver_assert)(Z3_context, Z3_solver, Z3_ast);
	void (*solver_push)(Z3_context, Z3_solver);
	void (*solver_pop)(Z3_context, Z3_solver, unsigned);
	int (*solver_check)(Z3_context, Z3_solver);
	const char *(*solver_get_reason_unknown)(Z3_context, Z3_solver);
	const char *(*solver_to_string)(Z3_context, Z3_solver);
} z;

static char mz_open_err[512];

const char *mz_open(const char *path) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		snprintf(mz_open_err, sizeof mz_open_err, "%s", dlerror());
		return mz_open_err;
	}
#define SYM(field, name)                                                                   \
	if ((*(void **)&z.field = dlsym(h, name)) == NULL) {                                   \
		snprintf(mz_open_err, sizeof mz_open_err, "%s: missing symbol %s", path, name);     \
		dlclose(h);                                                                        \
		return mz_open_err;                                                                \
	}
	SYM(get_version, "Z3_get_version")
	SYM(mk_config, "Z3_mk_config")
	SYM(del_config, "Z3_del_config")
	SYM(set_param_value, "Z3_set_param_value")
	SYM(mk_context_rc, "Z3_mk_context_rc")
	SYM(del_context, "Z3_del_context")
	SYM(set_error_handler, "Z3_set_error_handler")
	SYM(get_error_msg, "Z3_get_error_msg")
	SYM(interrupt, "Z3_interrupt")
	SYM(inc_ref, "Z3_inc_ref")
	SYM(dec_ref, "Z3_dec_ref")
	SYM(mk_string_symbol, "Z3_mk_string_symbol")
	SYM(mk_uninterpreted_sort, "Z3_mk_uninterpreted_sort")
	SYM(mk_int_sort, "Z3_mk_int_sort")
	SYM(mk_real_sort, "Z3_mk_real_sort")
	SYM(mk_bool_sort, "Z3_mk_bool_sort")
	SYM(sort_to_ast, "Z3_sort_to_ast")
	SYM(mk_func_decl, "Z3_mk_func_decl")
	SYM(func_decl_to_ast, "Z3_func_decl_to_ast")
	SYM(mk_const, "Z3_mk_const")
	SYM(mk_app, "Z3_mk_app")
	SYM(mk_numeral, "Z3_mk_numeral")
	SYM(mk_true, "Z3_mk_true")
	SYM(mk_eq, "Z3_mk_eq")
	SYM(mk_not, "Z3_mk_not")
	SYM(mk_implies, "Z3_mk_implies")
	SYM(mk_and, "Z3_mk_and")
	SYM(mk_lt, "Z3_mk_lt")
	SYM(mk_le, "Z3_mk_le")
	SYM(mk_mul, "Z3_mk_mul")
	SYM(mk_div, "Z3_mk_div")
	SYM(mk_mod, "Z3_mk_mod")
	SYM(to_app, "Z3_to_app")
	SYM(mk_pattern, "Z3_mk_pattern")
	SYM(pattern_to_ast, "Z3_pattern_to_ast")
	SYM(mk_forall_const, "Z3_mk_forall_const")
	SYM(ast_to_string, "Z3_ast_to_string")
	SYM(mk_solver, "Z3_mk_solver")
	SYM(solver_inc_ref, "Z3_solver_inc_ref")
	SYM(solver_dec_ref, "Z3_solver_dec_ref")
	SYM(mk_params, "Z3_mk_params")
	SYM(params_inc_ref, "Z3_params_inc_ref")
	SYM(params_dec_ref, "Z3_params_dec_ref")
	SYM(params_set_uint, "Z3_params_set_uint")
	SYM(params_set_bool, "Z3_params_set_bool")
	SYM(solver_set_params, "Z3_solver_set_params")
	SYM(solver_assert, "Z3_solver_assert")
	SYM(solver_push, "Z3_solver_push")
	SYM(solver_pop, "Z3_solver_pop")
	SYM(solver_check, "Z3_solver_check")
	SYM(solver_get_reason_unknown, "Z3_solver_get_reason_unknown")
	SYM(solver_to_string, "Z3_solver_to_string")
#undef SYM
	return NULL;
}

void mz_version(unsigned *major, unsigned *minor, unsigned *build, unsigned *rev) {
	z.get_version(major, minor, build, rev);
}

static __thread int mz_err;

static void mz_on_error(Z3_context c, int e) {
	(void)c;
	mz_err = e;
}

// mz_keep takes a reference on a freshly made AST unless the call failed.
static mz_res mz_keep(Z3_context c, Z3_ast a) {
	mz_res r = {a, mz_err};
	if (a != NULL && mz_err == MZ_OK) {
		z.inc_ref(c, a);
	} else if (r.err == MZ_OK) {
		r.err = MZ_EXCEPTION;  // NULL without a reported error: treat as failure
	}
	return r;
}

// Sorts and declarations are ASTs too; keep them as such so that one dec_ref
// path releases everything an arena holds.
static mz_res mz_keep_sort(Z3_context c, Z3_sort s) {
	if (s == NULL || mz_err != MZ_OK) {
		mz_res r = {NULL, mz_err != MZ_OK ? mz_err : MZ_EXCEPTION};
		return r;
	}
	return mz_keep(c, z.sort_to_ast(c, s));
}

mz_res mz_mk_context(void) {
	mz_res r = {NULL, MZ_OK};
	Z3_config cfg = z.mk_config();
	if (cfg == NULL) {
		r.err = MZ_EXCEPTION;
		return r;
	}
	z.set_param_value(cfg, "model", "false");
	Z3_context c = z.mk_context_rc(cfg);
	z.del_config(cfg);
	if (c == NULL) {
		r.err = MZ_EXCEPTION;
		return r;
	}
	z.set_error_handler(c, mz_on_error);
	r.p = c;
	return r;
}

void mz_del_context(Z3_context c) { z.del_context(c); }

const char *mz_error_msg(Z3_context c, int err) { return z.get_error_msg(c, err); }

void mz_interrupt(Z3_context c) { z.interrupt(c); }

int mz_dec_refs(Z3_context c, Z3_ast *asts, unsigned n) {
	mz_err = MZ_OK;
	for (unsigned i = 0; i < n; i++) {
		z.dec_ref(c, asts[i]);
	}
	return mz_err;
}

mz_res mz_uninterpreted_sort(Z3_context c, const char *name) {
	mz_err = MZ_OK;
	Z3_symbol s = z.mk_string_symbol(c, name);
	return mz_keep_sort(c, z.mk_uninterpreted_sort(c, s));
}

mz_res mz_int_sort(Z3_context c) {
	mz_err = MZ_OK;
	return mz_keep_sort(c, z.mk_int_sort(c));
}

mz_res mz_real_sort(Z3_context c) {
	mz_err = MZ_OK;
	return mz_keep_sort(c, z.mk_real_sort(c));
}

mz_res mz_bool_sort(Z3_context c) {
	mz_err = MZ_OK;
	return mz_keep_sort(c, z.mk_bool_sort(c));
}

mz_res mz_func_decl(Z3_context c, const char *name, unsigned n, Z3_sort *domain, Z3_sort range) {
	mz_err = MZ_OK;
	Z3_symbol s = z.mk_string_symbol(c, name);
	Z3_func_decl f = z.mk_func_decl(c, s, n, domain, range);
	if (f == NULL || mz_err != MZ_OK) {
		mz_res r = {NULL, mz_err != MZ_OK ? mz_err : MZ_EXCEPTION};
		return r;
	}
	return mz_keep(c, z.func_decl_to_ast(c, f));
}

mz_res mz_const(Z3_context c, const char *name, Z3_sort s) {
	mz_err = MZ_OK;
	Z3_symbol sym = z.mk_string_symbol(c, name);
	return mz_keep(c, z.mk_const(c, sym, s));
}

mz_res mz_app(Z3_context c, Z3_func_decl f, unsigned n, Z3_ast *args) {
	mz_err = MZ_OK;
	return mz_keep(c, z.mk_app(c, f, n, args));
}

mz_res mz_numeral(Z3_context c, const char *numeral, Z3_sort s) {
	mz_err = MZ_OK;
	return mz_keep(c, z.mk_numeral(c, numeral, s));
}

mz_res mz_true(Z3_context c) {
	mz_err = MZ_OK;
	return mz_keep(c, z.mk_true(c));
}

mz_res mz_eq(Z3_context c, Z3_ast x, Z3_ast y) {
	mz_err = MZ_OK;
	return mz_keep(c, z.mk_eq(c, x, y));
}

mz_res mz_not(Z3_context c, Z3_ast x) {
	mz_err = MZ_OK;
	return mz_keep(c, z.mk_not(c, x));
}

mz_res mz_implies(Z3_context c, Z3_ast x, Z3_ast y) {
	mz_err = MZ_OK;
	return mz_keep(c, z.mk_implies(c, x, y));
}

mz_res mz_and(Z3_context c, unsigned n, Z3_ast *xs) {
	mz_err = MZ_OK;
	return mz_keep(c, z.mk_and(c, n, xs));
}

mz_res mz_lt(Z3_context c, Z3_ast x, Z3_ast y) {
	mz_err = MZ_OK;
	return mz_keep(c, z.mk_lt(c, x, y));
}

mz_res mz_le(Z3_context c, Z3_ast x, Z3_ast y) {
	mz_err = MZ_OK;
	return mz_keep(c, z.mk_le(c, x, y));
}

mz_res mz_mul(Z3_context c, unsigned n, Z3_ast *xs) {
	mz_err = MZ_OK;
	return mz_keep(c, z.mk_mul(c, n, xs));
}

mz_res mz_idiv(Z3_context c, Z3_ast x, Z3_ast y) {
	mz_err = MZ_OK;
	return mz_keep(c, z.mk_div(c, x, y));
}

mz_res mz_mod(Z3_context c, Z3_ast x, Z3_ast y) {
	mz_err = MZ_OK;
	return mz_keep(c, z.mk_mod(c, x, y));
}

enum { MZ_MAX_BOUND = 16, MZ_MAX_PATTERNS = 16 };

mz_res mz_forall(Z3_context c, unsigned weight, unsigned nbound, Z3_ast *bound,
                 unsigned npatterns, unsigned *pattern_sizes, Z3_ast *pattern_terms,
                 Z3_ast body) {
	mz_err = MZ_OK;
	if (nbound > MZ_MAX_BOUND || npatterns > MZ_MAX_PATTERNS) {
		mz_res r = {NULL, MZ_EXCEPTION};
		return r;
	}
	Z3_app apps[MZ_MAX_BOUND];
	for (unsigned i = 0; i < nbound && mz_err == MZ_OK; i++) {
		apps[i] = z.to_app(c, bound[i]);
	}
	// Patterns live only for this call: referenced while the quantifier is
	// built, released right after (the quantifier holds its own references).
	Z3_pattern pats[MZ_MAX_PATTERNS];
	unsigned made = 0;
	for (unsigned i = 0, off = 0; i < npatterns && mz_err == MZ_OK; i++) {
		pats[i] = z.mk_pattern(c, pattern_sizes[i], pattern_terms + off);
		off += pattern_sizes[i];
		if (pats[i] == NULL || mz_err != MZ_OK) {
			break;
		}
		z.inc_ref(c, z.pattern_to_ast(c, pats[i]));
		made++;
	}
	Z3_ast q = NULL;
	if (mz_err == MZ_OK && made == npatterns) {
		q = z.mk_forall_const(c, weight, nbound, apps, npatterns, pats, body);
	}
	mz_res r = mz_keep(c, q);
	int err = mz_err;
	for (unsigned i = 0; i < made; i++) {
		z.dec_ref(c, z.pattern_to_ast(c, pats[i]));
	}
	if (r.err == MZ_OK && err != MZ_OK) {
		r.err = err;
	}
	return r;
}

const char *mz_ast_to_string(Z3_context c, Z3_ast a) { return z.ast_to_string(c, a); }

mz_res mz_mk_solver(Z3_context c) {
	mz_err = MZ_OK;
	mz_res r = {z.mk_solver(c), mz_err};
	if (r.p != NULL && r.err == MZ_OK) {
		z.solver_inc_ref(c, r.p);
	} else if (r.err == MZ_OK) {
		r.err = MZ_EXCEPTION;
	}
	return r;
}

void mz_solver_dec_ref(Z3_context c, Z3_solver s) { z.solver_dec_ref(c, s); }

mz_res mz_mk_params(Z3_context c) {
	mz_err = MZ_OK;
	mz_res r = {z.mk_params(c), mz_err};
	if (r.p != NULL && r.err == MZ_OK) {
		z.params_inc_ref(c, r.p);
	} else if (r.err == MZ_OK) {
		r.err = MZ_EXCEPTION;
	}
	return r;
}

void mz_params_dec_ref(Z3_context c, Z3_params p) { z.params_dec_ref(c, p); }

int mz_params_set_uint(Z3_context c, Z3_params p, const char *key, unsigned v) {
	mz_err = MZ_OK;
	z.params_set_uint(c, p, z.mk_string_symbol(c, key), v);
	return mz_err;
}

int mz_params_set_bool(Z3_context c, Z3_params p, const char *key, bool v) {
	mz_err = MZ_OK;
	z.params_set_bool(c, p, z.mk_string_symbol(c, key), v);
	return mz_err;
}

int mz_solver_set_params(Z3_context c, Z3_solver s, Z3_params p) {
	mz_err = MZ_OK;
	z.solver_set_params(c, s, p);
	return mz_err;
}

int mz_solver_assert(Z3_context c, Z3_solver s, Z3_ast a) {
	mz_err = MZ_OK;
	z.solver_assert(c, s, a);
	return mz_err;
}

int mz_solver_push(Z3_context c, Z3_solver s) {
	mz_err = MZ_OK;
	z.solver_push(c, s);
	return mz_err;
}

int mz_solver_pop(Z3_context c, Z3_solver s, unsigned n) {
	mz_err = MZ_OK;
	z.solver_pop(c, s, n);
	return mz_err;
}

mz_int mz_solver_check(Z3_context c, Z3_solver s) {
	mz_err = MZ_OK;
	mz_int r;
	r.v = z.solver_check(c, s);
	r.err = mz_err;
	return r;
}

const char *mz_solver_reason_unknown(Z3_context c, Z3_solver s) {
	mz_err = MZ_OK;
	return z.solver_get_reason_unknown(c, s);
}

const char *mz_solver_to_string(Z3_context c, Z3_solver s) {
	mz_err = MZ_OK;
	return z.solver_to_string(c, s);
}
