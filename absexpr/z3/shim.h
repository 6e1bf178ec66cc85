// Declarations of the small part of Z3's C API that mirage uses, and the C
// shims the Go side calls. Nothing here includes z3.h: the library is opened
// with dlopen at first use, so building mirage needs no Z3 at all.

#ifndef MIRAGE_Z3_SHIM_H
#define MIRAGE_Z3_SHIM_H

#include <stdbool.h>

// Opaque handles, spelled as in z3.h.
typedef struct _Z3_config *Z3_config;
typedef struct _Z3_context *Z3_context;
typedef struct _Z3_symbol *Z3_symbol;
typedef struct _Z3_ast *Z3_ast;
typedef struct _Z3_sort *Z3_sort;
typedef struct _Z3_func_decl *Z3_func_decl;
typedef struct _Z3_app *Z3_app;
typedef struct _Z3_pattern *Z3_pattern;
typedef struct _Z3_solver *Z3_solver;
typedef struct _Z3_params *Z3_params;

// Z3_lbool and Z3_error_code are C enums in z3.h, so ints.
enum { MZ_L_FALSE = -1, MZ_L_UNDEF = 0, MZ_L_TRUE = 1 };
enum { MZ_OK = 0, MZ_EXCEPTION = 12 };

// mz_open loads the library at path and resolves every symbol below.
// It returns NULL on success, else a message that names what failed.
const char *mz_open(const char *path);
// mz_version reports the loaded library's version (after mz_open succeeded).
void mz_version(unsigned *major, unsigned *minor, unsigned *build, unsigned *rev);

// A result of a shim: the pointer Z3 returned (already inc_ref'd when it is
// an AST, sort or declaration) and the error code Z3 raised during the call.
typedef struct {
	void *p;
	int err;
} mz_res;

mz_res mz_mk_context(void);  // Z3_mk_context_rc, error handler installed
void mz_del_context(Z3_context c);
const char *mz_error_msg(Z3_context c, int err);
void mz_interrupt(Z3_context c);
int mz_dec_refs(Z3_context c, Z3_ast *asts, unsigned n);

mz_res mz_uninterpreted_sort(Z3_context c, const char *name);
mz_res mz_int_sort(Z3_context c);
mz_res mz_real_sort(Z3_context c);
mz_res mz_bool_sort(Z3_context c);
mz_res mz_func_decl(Z3_context c, const char *name, unsigned n, Z3_sort *domain, Z3_sort range);
mz_res mz_const(Z3_context c, const char *name, Z3_sort s);
mz_res mz_app(Z3_context c, Z3_func_decl f, unsigned n, Z3_ast *args);
mz_res mz_numeral(Z3_context c, const char *numeral, Z3_sort s);
mz_res mz_true(Z3_context c);
mz_res mz_eq(Z3_context c, Z3_ast x, Z3_ast y);
mz_res mz_not(Z3_context c, Z3_ast x);
mz_res mz_implies(Z3_context c, Z3_ast x, Z3_ast y);
mz_res mz_and(Z3_context c, unsigned n, Z3_ast *xs);
mz_res mz_lt(Z3_context c, Z3_ast x, Z3_ast y);
mz_res mz_le(Z3_context c, Z3_ast x, Z3_ast y);
mz_res mz_mul(Z3_context c, unsigned n, Z3_ast *xs);
mz_res mz_idiv(Z3_context c, Z3_ast x, Z3_ast y);
mz_res mz_mod(Z3_context c, Z3_ast x, Z3_ast y);
// mz_forall builds a universally quantified body over the constants in bound.
// Pattern i is the multi-pattern made of the pattern_sizes[i] terms that
// follow pattern i-1's in pattern_terms.
mz_res mz_forall(Z3_context c, unsigned weight, unsigned nbound, Z3_ast *bound,
                 unsigned npatterns, unsigned *pattern_sizes, Z3_ast *pattern_terms,
                 Z3_ast body);
const char *mz_ast_to_string(Z3_context c, Z3_ast a);

mz_res mz_mk_solver(Z3_context c);
void mz_solver_dec_ref(Z3_context c, Z3_solver s);
mz_res mz_mk_params(Z3_context c);
void mz_params_dec_ref(Z3_context c, Z3_params p);
int mz_params_set_uint(Z3_context c, Z3_params p, const char *key, unsigned v);
int mz_params_set_bool(Z3_context c, Z3_params p, const char *key, bool v);
int mz_solver_set_params(Z3_context c, Z3_solver s, Z3_params p);
int mz_solver_assert(Z3_context c, Z3_solver s, Z3_ast a);
int mz_solver_push(Z3_context c, Z3_solver s);
int mz_solver_pop(Z3_context c, Z3_solver s, unsigned n);
// A Z3_lbool, or another int, with the error code raised while computing it.
typedef struct {
	int v;
	int err;
} mz_int;

mz_int mz_solver_check(Z3_context c, Z3_solver s);
const char *mz_solver_reason_unknown(Z3_context c, Z3_solver s);
const char *mz_solver_to_string(Z3_context c, Z3_solver s);

#endif
