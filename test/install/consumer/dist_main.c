/* test/install/consumer/dist_main.c: a program of another project that
 * links the installed distributed layer (libarrayc_dist, arrayc/dist.h)
 * and MPI: the SAXPY of docs/distributed.md over two vectors distributed
 * across the ranks, gathered to rank 0. The install test
 * (test/install/consumer.sh) builds it with CMake (arrayc::dist) and with
 * pkg-config (arrayc_dist.pc), runs it under `mpirun -np 2` and compares
 * what rank 0 prints (the other ranks print nothing):
 *   dist 2 ranks local saxpy [3, 6, 9, 12, 15]
 */
#include <arrayc/arrayc.h>
#include <arrayc/dist.h>

#include <stdio.h>
#include <string.h>

static const char program[] = "fn saxpy(a: f32, x: f32[], y: f32[]) -> f32[] {\n"
                              "  map(|u, v| a * u + v, x, y)\n"
                              "}\n";

/* The call and the gather; *err on failure (the same on every rank). */
static ac_status run(ac_dist_runtime *rt, ac_module *m, ac_array *full, ac_error **err) {
  ac_dist_function *f = NULL;
  ac_dist_datum args[3] = {{AC_DIST_SCALAR, {AC_DATUM_SCALAR, AC_F32, {.f = 2}, NULL}, NULL},
                           {AC_DIST_DISTRIBUTED, {0}, NULL},
                           {AC_DIST_DISTRIBUTED, {0}, NULL}};
  ac_dist_datum res = {AC_DIST_SCALAR, {0}, NULL};
  ac_array *y = NULL;
  ac_status st = ac_dist_function_create(rt, m, "saxpy", &f, err);
  if (st == AC_OK)
    st = ac_dist_array_from_full(rt, full, &args[1].dist, err);
  if (st == AC_OK)
    st = ac_dist_array_from_full(rt, full, &args[2].dist, err);
  if (st == AC_OK)
    st = ac_dist_function_call(f, args, 3, &res, 1, err);
  if (st == AC_OK)
    st = ac_dist_array_gather(rt, res.dist, 0, &y, err);
  if (st == AC_OK && y) { /* rank 0 */
    const float *v = ac_array_data(y);
    printf("dist %d ranks %s saxpy [", ac_dist_runtime_size(rt),
           ac_dist_function_strategy(f) == AC_DIST_LOCAL ? "local" : "gather");
    for (int64_t i = 0; i < ac_array_size(y); i++)
      printf("%s%g", i ? ", " : "", v[i]);
    printf("]\n");
  }
  ac_array_release(y);
  ac_dist_datum_release(&res);
  ac_dist_datum_release(&args[1]);
  ac_dist_datum_release(&args[2]);
  if (f)
    ac_dist_function_destroy(f);
  return st;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  ac_context *ctx = ac_context_create();
  ac_dist_runtime *rt = NULL;
  ac_module *m = NULL;
  ac_array *full = NULL;
  ac_error *err = NULL;
  static const float x[5] = {1, 2, 3, 4, 5};
  const int64_t n = 5;
  ac_status st = ctx ? AC_OK : AC_ERR_NOMEM;
  if (st == AC_OK)
    st = ac_dist_runtime_create(ctx, MPI_COMM_WORLD, AC_BACKEND_CPU, &rt, &err);
  /* the same on every rank: a local failure here would be every rank's */
  if (st == AC_OK)
    st = ac_module_parse(ctx, "saxpy.ac", program, strlen(program), &m, &err);
  if (st == AC_OK && !(full = ac_array_create(ctx, AC_F32, 1, &n, x, &err)))
    st = err ? ac_error_status(err) : AC_ERR_NOMEM;
  if (st == AC_OK)
    st = run(rt, m, full, &err);
  if (st != AC_OK && (!rt || ac_dist_runtime_rank(rt) == 0))
    fputs(err ? ac_error_text(err) : "error without a message\n", stdout);
  ac_error_destroy(err);
  ac_array_release(full);
  if (m)
    ac_module_destroy(m);
  ac_dist_runtime_destroy(rt);
  if (ctx)
    ac_context_destroy(ctx);
  MPI_Finalize();
  return st == AC_OK ? 0 : 1;
}
