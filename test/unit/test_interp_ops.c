/* Interpreter tests of the array operations through program text
 * (docs/language.md §7): construction, map, reductions, scans, gathers and
 * scatters, index-space changes, stencils, filter, array loops, nested
 * operations and recurrences, with their edge cases (empty arrays, rank > 1,
 * tuples of arrays) and runtime errors, and a few runs on large arrays that
 * must stay fast. */
#include "test_interp_util.h"

UNIT_TEST(building_arrays) {
  const char *src =
      "fn build(n: i64) -> (i64[], i32[,], (f32, bool)[], i64[,]) {\n"
      "  (iota(n), fill((2, 3), 7), fill(n, (1.5f32, true)), generate((2, 2), |i, j| 10 * i + j))\n"
      "}\n"
      "fn literals() -> (f64[], i32[,], u8[], (i32, bool)[]) {\n"
      "  ([1, 2.5], [[1, 2], [3, 4]], [], [(1, true), (2, false)])\n"
      "}\n"
      "fn cube(n: u8) -> i64[,,] {\n"
      "  generate((2, n, 2), |i, j, k| 100 * i + 10 * j + k)\n"
      "}\n"
      "fn wide(n: i64) -> u8[,] {\n"
      "  fill((n, n), 1u8)\n"
      "}\n";
  CHECK_STR(run(src, "build", "3"),
            "[0, 1, 2]\n[[7, 7, 7], [7, 7, 7]]\n[1.5, 1.5, 1.5]\n[true, true, true]\n"
            "[[0, 1], [10, 11]]");
  CHECK_STR(run(src, "build", "0"), "[]\n[[7, 7, 7], [7, 7, 7]]\n[]\n[]\n[[0, 1], [10, 11]]");
  CHECK_STR(run(src, "build", "-2"), "2:4: error: negative extent -2");
  CHECK_STR(run(src, "literals", ""), "[1.0, 2.5]\n[[1, 2], [3, 4]]\n[]\n[1, 2]\n[true, false]");
  CHECK_STR(run(src, "cube", "2"), "[[[0, 1], [10, 11]], [[100, 101], [110, 111]]]");
  CHECK_STR(run(src, "cube", "0"), "[[], []]");
  CHECK_STR(run(src, "wide", "4294967296"), "11:3: error: array too large");
  CHECK_STR(run(src, "wide", "2"), "[[1, 1], [1, 1]]");
}

UNIT_TEST(map_over_equal_shapes) {
  const char *src = "fn saxpy(a: f32, xs: f32[], ys: f32[]) -> f32[] {\n"
                    "  map(|x, y| a * x + y, xs, ys)\n"
                    "}\n"
                    "fn divmod(xs: i32[,], d: i32) -> (i32, i32)[,] {\n"
                    "  map(|x| (x / d, x % d), xs)\n"
                    "}\n"
                    "fn norms(pts: (f64, f64)[]) -> (f64, bool)[] {\n"
                    "  map(|p| {\n"
                    "    let n = sqrt(p.0 * p.0 + p.1 * p.1);\n"
                    "    (n, n > 1.0)\n"
                    "  }, pts)\n"
                    "}\n"
                    "fn mixed(a: i32[,], p: (f64[,], bool[,])) -> f64[,] {\n"
                    "  map(|x, q| if q.1 { f64(x) } else { q.0 }, a, p)\n"
                    "}\n";
  CHECK_STR(run(src, "saxpy", "2 [1,2,3] [0.5,0.5,0.5]"), "[2.5, 4.5, 6.5]");
  CHECK_STR(run(src, "saxpy", "2 [1,2,3] [1,2]"),
            "2:3: error: map: arrays have different shapes: [3] and [2]");
  CHECK_STR(run(src, "divmod", "[[7,8],[9,10]] 4"), "[[1, 2], [2, 2]]\n[[3, 0], [1, 2]]");
  CHECK_STR(run(src, "divmod", "[[],[]] 4"), "[[], []]\n[[], []]");
  CHECK_STR(run(src, "norms", "[3,0.6] [4,0.8]"), "[5.0, 1.0]\n[true, false]");
  CHECK_STR(run(src, "mixed", "[[1,2]] [[0.5,0.25]] [[true,false]]"), "[[1.0, 0.25]]");
  CHECK_STR(run(src, "mixed", "[[1,2]] [[0.5,0.25]] [[true],[false]]"),
            "14:3: error: map: arrays have different shapes: [1, 2] and [2, 1]");
}

UNIT_TEST(folds_and_segmented_folds) {
  const char *src = "fn sum_rows(m: i32[,]) -> i32[] {\n"
                    "  fold(|a, b| a + b, 0, m)\n"
                    "}\n"
                    "fn sum_max(xs: i32[], ys: i32[]) -> (i32, i32) {\n"
                    "  fold(|p, q| (p.0 + q.0, max(p.1, q.1)), (0, -2147483648), (xs, ys))\n"
                    "}\n"
                    "fn seg_sums(xs: i32[], lens: i64[]) -> i32[] {\n"
                    "  fold_seg(|a, b| a + b, 0, xs, lens)\n"
                    "}\n"
                    "fn left(xs: f64[]) -> f64 { fold(|a, b| a / b, 1.0, xs) }\n"
                    "fn planes(c: i64[,,]) -> i64[,] { fold(|a, b| a * 10 + b, 0, c) }\n";
  CHECK_STR(run(src, "sum_rows", "[[1,2,3],[4,5,6]]"), "[6, 15]");
  CHECK_STR(run(src, "sum_rows", "[[],[],[]]"), "[0, 0, 0]");
  CHECK_STR(run(src, "sum_rows", "[]"), "[]");
  CHECK_STR(run(src, "sum_max", "[1,2,3] [7,-1,9]"), "6\n9");
  CHECK_STR(run(src, "sum_max", "[] []"), "0\n-2147483648");
  CHECK_STR(run(src, "seg_sums", "[1,2,3,4,5] [2,0,3]"), "[3, 0, 12]");
  CHECK_STR(run(src, "seg_sums", "[] []"), "[]");
  CHECK_STR(run(src, "seg_sums", "[] [0,0]"), "[0, 0]");
  CHECK_STR(run(src, "seg_sums", "[1,2,3,4,5] [2,2]"),
            "8:3: error: fold_seg: segment lengths sum to 4 but the array has 5 elements");
  CHECK_STR(run(src, "seg_sums", "[1,2,3] [4,-1]"),
            "8:3: error: fold_seg: negative segment length -1");
  /* strictly left to right: ((1 / 2) / 4) */
  CHECK_STR(run(src, "left", "[2,4]"), "0.125");
  CHECK_STR(run(src, "planes", "[[[1,2],[3,4]],[[5,6],[7,8]]]"), "[[12, 34], [56, 78]]");
}

UNIT_TEST(scans_along_the_innermost_dimension) {
  const char *src =
      "fn prefix(xs: i32[]) -> (i32[], i32[], i32[], i32[]) {\n"
      "  (scan(|a, b| a + b, 0, xs), scan_incl(|a, b| a + b, xs),\n"
      "   scanr(|a, b| a + b, 0, xs), scanr_incl(|a, b| a + b, xs))\n"
      "}\n"
      "fn order(xs: i32[]) -> (i32[], i32[]) {\n"
      "  (scanr(|a, b| a - b, 100, xs), scan(|a, b| a - b, 100, xs))\n"
      "}\n"
      "fn row_scan(m: i32[,]) -> i32[,] {\n"
      "  scan_incl(|a, b| a + b, m)\n"
      "}\n"
      "fn seg_scans(xs: i32[], lens: i32[]) -> (i32[], i32[]) {\n"
      "  (scan_seg(|a, b| a + b, 0, xs, lens), scan_incl_seg(|a, b| a + b, xs, lens))\n"
      "}\n"
      "fn pair_scan(p: (i32, f64)[]) -> (i32, f64)[] {\n"
      "  scan_incl(|a, b| (a.0 + b.0, a.1 * b.1), p)\n"
      "}\n";
  CHECK_STR(run(src, "prefix", "[1,2,3]"), "[0, 1, 3]\n[1, 3, 6]\n[5, 3, 0]\n[6, 5, 3]");
  CHECK_STR(run(src, "prefix", "[4]"), "[0]\n[4]\n[0]\n[4]");
  CHECK_STR(run(src, "prefix", "[]"), "[]\n[]\n[]\n[]");
  /* scanr: out[k] = f(a[k+1], out[k+1]); scan: out[k] = f(out[k-1], a[k-1]) */
  CHECK_STR(run(src, "order", "[1,2,3]"), "[99, -97, 100]\n[100, 99, 97]");
  CHECK_STR(run(src, "row_scan", "[[1,1,1],[2,2,2]]"), "[[1, 2, 3], [2, 4, 6]]");
  CHECK_STR(run(src, "row_scan", "[[],[]]"), "[[], []]");
  CHECK_STR(run(src, "seg_scans", "[1,2,3,4,5] [2,3]"), "[0, 1, 0, 3, 7]\n[1, 3, 3, 7, 12]");
  CHECK_STR(run(src, "seg_scans", "[1,2,3] [0,3,0]"), "[0, 1, 3]\n[1, 3, 6]");
  CHECK_STR(run(src, "seg_scans", "[1,2,3] [1,1]"),
            "12:4: error: scan_seg: segment lengths sum to 2 but the array has 3 elements");
  CHECK_STR(run(src, "seg_scans", "[1,2,3] [4,-1]"),
            "12:4: error: scan_seg: negative segment length -1");
  CHECK_STR(run(src, "pair_scan", "[1,2,3] [2,0.5,4]"), "[1, 3, 6]\n[2.0, 1.0, 4.0]");
}

UNIT_TEST(gathers_and_backpermutes) {
  const char *src = "fn gathers(xs: i32[], m: i32[,], is: i64[], js: i64[]) -> (i32[], i32[]) {\n"
                    "  (gather(is, xs), gather((is, js), m))\n"
                    "}\n"
                    "fn transpose_by_hand(m: i32[,]) -> i32[,] {\n"
                    "  let (r, c) = shape(m);\n"
                    "  backpermute((c, r), |i, j| (j, i), m)\n"
                    "}\n"
                    "fn shift(xs: f64[], k: u8) -> f64[] {\n"
                    "  backpermute(len(xs), |i| i + i64(k), xs)\n"
                    "}\n"
                    "fn g2(idx: i32[,], p: (u8, bool)[]) -> (u8, bool)[,] {\n"
                    "  gather(idx, p)\n"
                    "}\n";
  CHECK_STR(run(src, "gathers", "[10,20,30] [[1,2],[3,4],[5,6]] [2,0] [1,0]"), "[30, 10]\n[6, 1]");
  CHECK_STR(run(src, "gathers", "[10,20,30] [[1,2],[3,4],[5,6]] [] []"), "[]\n[]");
  CHECK_STR(run(src, "gathers", "[10,20,30] [[1,2],[3,4],[5,6]] [2,0] [5,0]"),
            "2:20: error: gather: index 5 out of bounds for dimension 1 of extent 2");
  CHECK_STR(run(src, "gathers", "[10,20,30] [[1,2],[3,4],[5,6]] [3,0] [0,0]"),
            "2:4: error: gather: index 3 out of bounds for dimension 0 of extent 3");
  CHECK_STR(run(src, "transpose_by_hand", "[[1,2,3],[4,5,6]]"), "[[1, 4], [2, 5], [3, 6]]");
  CHECK_STR(run(src, "shift", "[1,2,3] 0"), "[1.0, 2.0, 3.0]");
  CHECK_STR(run(src, "shift", "[1,2,3] 1"),
            "9:3: error: backpermute: index 3 out of bounds for dimension 0 of extent 3");
  CHECK_STR(run(src, "g2", "[[0,1],[1,1]] [7,8] [true,false]"),
            "[[7, 8], [8, 8]]\n[[true, false], [false, false]]");
}

UNIT_TEST(scatters_and_permutes) {
  const char *src = "fn scatters(dest: i32[]) -> i32[] {\n"
                    "  scatter([0, 2], [7, 9], dest)\n"
                    "}\n"
                    "fn sc(idx: i64[], vals: i32[], dest: i32[]) -> i32[] {\n"
                    "  scatter(idx, vals, dest)\n"
                    "}\n"
                    "fn sc2(is: i64[], js: i64[], vals: i32[], dest: i32[,]) -> i32[,] {\n"
                    "  scatter((is, js), vals, dest)\n"
                    "}\n"
                    "fn histogram(bins: i64[], k: i64) -> i32[] {\n"
                    "  permute(|acc, x| acc + x, fill(k, 0), |i| bins[i], fill(len(bins), 1))\n"
                    "}\n"
                    "fn order(dst: i64[], xs: i32[]) -> i32[] {\n"
                    "  permute(|acc, x| acc * 10 + x, fill(2, 0), |i| dst[i], xs)\n"
                    "}\n"
                    "fn perm2(m: i32[,]) -> i32[,] {\n"
                    "  permute(|a, b| a + b, fill((2, 2), 0), |i, j| (j % 2, i % 2), m)\n"
                    "}\n";
  CHECK_STR(run(src, "scatters", "[1,1,1,1]"), "[7, 1, 9, 1]");
  CHECK_STR(run(src, "scatters", "[1,1]"),
            "2:3: error: scatter: index 2 out of range for extent 2");
  CHECK_STR(run(src, "sc", "[] [] [5]"), "[5]");
  CHECK_STR(run(src, "sc", "[1,1] [7,9] [0,0,0]"), "5:3: error: scatter: index 1 written twice");
  CHECK_STR(run(src, "sc", "[0,-1] [7,9] [0,0,0]"),
            "5:3: error: scatter: index -1 out of range for extent 3");
  CHECK_STR(run(src, "sc", "[0] [7,9] [0,0,0]"),
            "5:3: error: scatter: arrays have different shapes: [1] and [2]");
  CHECK_STR(run(src, "sc2", "[1,0] [0,1] [5,6] [[0,0],[0,0]]"), "[[0, 6], [5, 0]]");
  CHECK_STR(run(src, "sc2", "[1,1] [0,2] [5,6] [[0,0],[0,0]]"),
            "8:3: error: scatter: index (1, 2) out of range for shape [2, 2]");
  CHECK_STR(run(src, "sc2", "[1,1] [0,0] [5,6] [[0,0],[0,0]]"),
            "8:3: error: scatter: index (1, 0) written twice");
  CHECK_STR(run(src, "histogram", "[0,2,2,3,0,2] 4"), "[2, 0, 3, 1]");
  CHECK_STR(run(src, "histogram", "[0,4] 4"),
            "11:3: error: permute: index 4 out of range for extent 4");
  /* row-major order of the source: 1, 2, 3 into slot 0 gives ((0*10+1)*10+2)*10+3 */
  CHECK_STR(run(src, "order", "[0,0,1,0] [1,2,9,3]"), "[123, 9]");
  CHECK_STR(run(src, "perm2", "[[1,2,3],[4,5,6]]"), "[[4, 10], [2, 5]]");
}

UNIT_TEST(index_space_changes) {
  const char *src = "fn slices(xs: i32[], m: i32[,]) -> (i32[], i32[], i32[,]) {\n"
                    "  (slice(xs, 1, 3), slice(xs, 1, 8, 3), slice(m, (0, 1), (2, 3)))\n"
                    "}\n"
                    "fn sl(a: i32[], lo: i64, hi: i64, st: i64) -> i32[] {\n"
                    "  slice(a, lo, hi, st)\n"
                    "}\n"
                    "fn sl2(m: i32[,], st: i64) -> i32[,] {\n"
                    "  slice(m, (0, 0), (2, 3), (1, st))\n"
                    "}\n"
                    "fn shapes(xs: i64[]) -> (i64[,], i64[,], i64[], i64[,]) {\n"
                    "  let m = reshape((2, 3), xs);\n"
                    "  (m, transpose(m), reverse(xs), replicate(2, slice(xs, 0, 2)))\n"
                    "}\n"
                    "fn cube(c: i32[,,]) -> (i32[,,], i32[,,], i32[]) {\n"
                    "  (transpose(c), reverse(c), reshape(8, c))\n"
                    "}\n"
                    "fn rep(n: i64, p: (i32, bool)[]) -> (i32, bool)[,] {\n"
                    "  replicate(n, p)\n"
                    "}\n";
  CHECK_STR(run(src, "slices", "[0,1,2,3,4,5,6,7,8,9] [[1,2,3],[4,5,6]]"),
            "[1, 2]\n[1, 4, 7]\n[[2, 3], [5, 6]]");
  CHECK_STR(run(src, "sl", "[1,2,3] 3 3 5"), "[]");
  CHECK_STR(run(src, "sl", "[1,2,3] 0 3 9223372036854775807"), "[1]");
  CHECK_STR(run(src, "sl", "[1,2,3] 1 4 1"),
            "5:3: error: slice: bounds 1..4 out of range for extent 3");
  CHECK_STR(run(src, "sl", "[1,2,3] 2 1 1"),
            "5:3: error: slice: bounds 2..1 out of range for extent 3");
  CHECK_STR(run(src, "sl", "[1,2,3] -1 1 1"),
            "5:3: error: slice: bounds -1..1 out of range for extent 3");
  CHECK_STR(run(src, "sl", "[1,2,3] 0 3 0"), "5:3: error: slice: stride 0 is not positive");
  CHECK_STR(run(src, "sl2", "[[1,2,3],[4,5,6]] 2"), "[[1, 3], [4, 6]]");
  CHECK_STR(run(src, "sl2", "[[1,2,3],[4,5,6]] -2"),
            "8:3: error: slice: stride -2 is not positive in dimension 1");
  CHECK_STR(run(src, "sl2", "[[1,2],[4,5]] 1"),
            "8:3: error: slice: bounds 0..3 out of range for extent 2 in dimension 1");
  CHECK_STR(
      run(src, "shapes", "[1,2,3,4,5,6]"),
      "[[1, 2, 3], [4, 5, 6]]\n[[1, 4], [2, 5], [3, 6]]\n[6, 5, 4, 3, 2, 1]\n[[1, 2], [1, 2]]");
  CHECK_STR(run(src, "shapes", "[1,2,3,4]"),
            "11:11: error: reshape: cannot reshape 4 elements to [2, 3]");
  CHECK_STR(run(src, "cube", "[[[1,2],[3,4]],[[5,6],[7,8]]]"),
            "[[[1, 3], [2, 4]], [[5, 7], [6, 8]]]\n[[[2, 1], [4, 3]], [[6, 5], [8, 7]]]\n"
            "[1, 2, 3, 4, 5, 6, 7, 8]");
  CHECK_STR(run(src, "rep", "3 [1,2] [true,false]"),
            "[[1, 2], [1, 2], [1, 2]]\n[[true, false], [true, false], [true, false]]");
  CHECK_STR(run(src, "rep", "0 [1,2] [true,false]"), "[]\n[]");
  CHECK_STR(run(src, "rep", "-1 [1,2] [true,false]"), "18:3: error: negative extent -1");
  CHECK_STR(run(src, "rep", "1 [1,2] [true]"),
            "18:3: error: replicate: arrays have different shapes: [2] and [1]");
}

UNIT_TEST(stencils_and_their_boundaries) {
  const char *src = "fn left_neighbour(xs: i32[]) -> (i32[], i32[], i32[], i32[]) {\n"
                    "  (stencil(|w| w[-1], clamp, xs), stencil(|w| w[-1], mirror, xs),\n"
                    "   stencil(|w| w[-1], wrap, xs), stencil(|w| w[-1], 0, xs))\n"
                    "}\n"
                    "fn smooth(m: f64[,]) -> f64[,] {\n"
                    "  stencil(|w| (w[-1, 0] + w[1, 0] + w[0, -1] + w[0, 1]) / 4.0, clamp, m)\n"
                    "}\n"
                    "fn far(xs: i32[]) -> (i32[], i32[], i32[]) {\n"
                    "  (stencil(|w| w[-3], mirror, xs), stencil(|w| w[7], wrap, xs), stencil(|w| "
                    "w[5], clamp, xs))\n"
                    "}\n"
                    "fn rows(m: i32[,]) -> i32[,] {\n"
                    "  stencil(|w| w[1, 1] * 10 + w[-1, 0], mirror, m)\n"
                    "}\n"
                    "fn pairs(p: (i32, f64)[], d: i32) -> (f64, i32)[] {\n"
                    "  stencil(|w| (w[1].1, w[-1].0 + w[0].0), (d, -1.0), p)\n"
                    "}\n";
  CHECK_STR(run(src, "left_neighbour", "[10,20,30,40]"),
            "[10, 10, 20, 30]\n[20, 10, 20, 30]\n[40, 10, 20, 30]\n[0, 10, 20, 30]");
  CHECK_STR(run(src, "left_neighbour", "[10]"), "[10]\n[10]\n[10]\n[0]");
  CHECK_STR(run(src, "left_neighbour", "[]"), "[]\n[]\n[]\n[]");
  CHECK_STR(run(src, "smooth", "[[0,4],[8,12]]"), "[[3.0, 5.0], [7.0, 9.0]]");
  CHECK_STR(run(src, "far", "[5,6,7]"), "[6, 7, 6]\n[6, 7, 5]\n[7, 7, 7]");
  /* extent 1 in the first dimension: mirror reads row 0 */
  CHECK_STR(run(src, "rows", "[[1,2,3]]"), "[[21, 32, 23]]");
  CHECK_STR(run(src, "rows", "[[1,2],[3,4]]"), "[[43, 34], [21, 12]]");
  CHECK_STR(run(src, "pairs", "[1,2,3] [0.5,1.5,2.5] 100"), "[1.5, 2.5, -1.0]\n[101, 3, 5]");
}

UNIT_TEST(filters_and_array_loops) {
  const char *src = "fn positives(xs: i32[], ys: f32[]) -> (i32, f32)[] {\n"
                    "  filter(|p| p.0 > 0, (xs, ys))\n"
                    "}\n"
                    "fn diffuse(xs: i32[], steps: i32) -> i32[] {\n"
                    "  iterate(steps, |v| stencil(|w| (w[-1] + 2 * w[0] + w[1]) / 4, 0, v), xs)\n"
                    "}\n"
                    "fn first_power_above(x: i64, limit: i64) -> i64 {\n"
                    "  while(|p| p <= limit, |p| p * x, 1i64)\n"
                    "}\n"
                    "fn halve(xs: i32[]) -> (i32[], i32) {\n"
                    "  while(|s| len(s.0) > 1, |s| (filter(|x| x % 2 == 0, map(|x| x / 2, s.0)), "
                    "s.1 + 1), (xs, 0))\n"
                    "}\n"
                    "fn fibs(n: u8) -> (i64, i64) {\n"
                    "  iterate(n, |p| (p.1, p.0 + p.1), (0i64, 1i64))\n"
                    "}\n";
  CHECK_STR(run(src, "positives", "[3,-1,4,-1,5] [0.5,1.5,2.5,3.5,4.5]"),
            "[3, 4, 5]\n[0.5, 2.5, 4.5]");
  CHECK_STR(run(src, "positives", "[-1] [0.5]"), "[]\n[]");
  CHECK_STR(run(src, "positives", "[1] [0.5,1]"),
            "2:3: error: filter: arrays have different shapes: [1] and [2]");
  CHECK_STR(run(src, "diffuse", "[0,0,16,0,0] 2"), "[1, 4, 6, 4, 1]");
  CHECK_STR(run(src, "diffuse", "[0,0,16,0,0] 0"), "[0, 0, 16, 0, 0]");
  CHECK_STR(run(src, "diffuse", "[0,0,16,0,0] -3"), "[0, 0, 16, 0, 0]");
  CHECK_STR(run(src, "first_power_above", "3 100"), "243");
  CHECK_STR(run(src, "first_power_above", "3 0"), "1");
  CHECK_STR(run(src, "halve", "[8,16,4,32]"), "[2]\n4");
  CHECK_STR(run(src, "halve", "[3,5]"), "[2]\n1");
  CHECK_STR(run(src, "halve", "[7]"), "[7]\n0");
  CHECK_STR(run(src, "fibs", "10"), "55\n89");
}

UNIT_TEST(nested_operations) {
  const char *src = "fn matvec(m: f64[,], v: f64[]) -> f64[] {\n"
                    "  let (r, c) = shape(m);\n"
                    "  generate(r, |i| fold(|a, b| a + b, 0.0, generate(c, |j| m[i, j] * v[j])))\n"
                    "}\n"
                    "fn tri(n: i64) -> i64[] {\n"
                    "  map(|k| fold(|a, b| a + b, 0, scan_incl(|a, b| a + b, iota(k))), iota(n))\n"
                    "}\n"
                    "fn bad(xs: i32[]) -> i32[] {\n"
                    "  map(|x| fold(|a, b| a + b, 0, slice(xs, 0, i64(x))), xs)\n"
                    "}\n";
  CHECK_STR(run(src, "matvec", "[[1,2],[3,4],[5,6]] [1,0.5]"), "[2.0, 5.0, 8.0]");
  CHECK_STR(run(src, "tri", "5"), "[0, 0, 1, 4, 10]");
  CHECK_STR(run(src, "bad", "[1,2,3]"), "[1, 3, 6]");
  CHECK_STR(run(src, "bad", "[1,5,3]"),
            "9:33: error: slice: bounds 0..5 out of range for extent 3");
}

UNIT_TEST(recurrences) {
  const char *src =
      "fn fib(n: i64) -> i64[] {\n"
      "  rec f (i in 0..n) -> i64 {\n"
      "    if i < 2 { i } else { f[i - 1] + f[i - 2] }\n"
      "  }\n"
      "}\n"
      "fn factorials(n: i64) -> (i64[], i64) {\n"
      "  let d = rec (i in 1..=n) -> i64 {\n"
      "    if i == 1 { 1 } else { d[i - 1] * i }\n"
      "  };\n"
      "  (d, d[n - 1])\n"
      "}\n"
      "fn edit_distance(s: u8[], t: u8[]) -> i32 {\n"
      "  let n = len(s);\n"
      "  let m = len(t);\n"
      "  let d = rec (i in 0..=n, j in 0..=m) -> i32 {\n"
      "    if i == 0 { i32(j) } else if j == 0 { i32(i) } else {\n"
      "      min(min(d[i - 1, j] + 1, d[i, j - 1] + 1),\n"
      "          d[i - 1, j - 1] + (if s[i - 1] == t[j - 1] { 0 } else { 1 }))\n"
      "    }\n"
      "  };\n"
      "  d[n, m]\n"
      "}\n"
      "fn walks(adj: bool[,], n: i64) -> i64[,] {\n"
      "  let m = len(adj);\n"
      "  rec c (t in 0..=n, s in 0..m) -> i64 {\n"
      "    if t == 0 { if s == 0 { 1 } else { 0 } } else {\n"
      "      fold(|a, b| a + b, 0, generate(m, |k| if adj[k, s] { c[t - 1, k] } else { 0 }))\n"
      "    }\n"
      "  }\n"
      "}\n"
      "fn shifted(xs: i64[]) -> i64[] {\n"
      "  let n = len(xs);\n"
      "  rec d (i in 0..n) -> i64 {\n"
      "    d[i - 1] + xs[i]\n"
      "  }\n"
      "}\n"
      "fn pairs(n: i64) -> (i64, bool)[] {\n"
      "  rec p (i in 0..n) -> (i64, bool) {\n"
      "    if i == 0 { (1, true) } else { (p[i - 1].0 * 2, !p[i - 1].1) }\n"
      "  }\n"
      "}\n"
      "fn table(n: i64) -> (i64, f32)[,] {\n"
      "  rec (i in 0..n, j in 1..=2) -> (i64, f32) { (i * j, f32(j)) }\n"
      "}\n"
      "fn per_element(xs: f64[]) -> f64[] {\n"
      "  map(|x| {\n"
      "    let d = rec (i in 0..=3) -> f64 { if i == 0 { x } else { d[i - 1] * 2.0 } };\n"
      "    d[3]\n"
      "  }, xs)\n"
      "}\n"
      "fn window(lo: i64, hi: i64) -> i64[] {\n"
      "  rec d (i in lo..=hi) -> i64 { if i == lo { i } else { d[i - 1] + i } }\n"
      "}\n";
  CHECK_STR(run(src, "fib", "10"), "[0, 1, 1, 2, 3, 5, 8, 13, 21, 34]");
  CHECK_STR(run(src, "fib", "0"), "[]");
  CHECK_STR(run(src, "fib", "-1"), "2:3: error: negative extent -1");
  CHECK_STR(run(src, "factorials", "5"), "[1, 2, 6, 24, 120]\n120");
  CHECK_STR(run(src, "edit_distance", "[107,105,116,116,101,110] [115,105,116,116,105,110,103]"),
            "3");
  CHECK_STR(run(src, "edit_distance", "[] [1,2]"), "2");
  CHECK_STR(run(src, "walks", "[[false,true],[true,true]] 3"), "[[1, 0], [0, 1], [1, 1], [1, 2]]");
  CHECK_STR(run(src, "shifted", "[1,2,3]"), "34:5: error: rec: read of d[-1] outside the domain");
  CHECK_STR(run(src, "pairs", "4"), "[1, 2, 4, 8]\n[true, false, true, false]");
  CHECK_STR(run(src, "table", "3"),
            "[[0, 0], [1, 2], [2, 4]]\n[[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]]");
  CHECK_STR(run(src, "table", "0"), "[]\n[]");
  CHECK_STR(run(src, "per_element", "[1,2.5]"), "[8.0, 20.0]");
  CHECK_STR(run(src, "window", "-2 1"), "[-2, -3, -3, -2]");
  CHECK_STR(run(src, "window", "5 4"), "[]");
  CHECK_STR(run(src, "window", "5 2"), "52:3: error: negative extent -2");
}

/* Large inputs: every operation must be linear (a quadratic one would take
 * hours here), and element reads must not allocate. */
UNIT_TEST(large_arrays_stay_fast) {
  const char *src = "fn big(n: i64) -> (f64, i64, i64, i64) {\n"
                    "  let xs = map(|i| f64(i % 10), iota(n));\n"
                    "  let s = scan_incl(|a, b| a + b, xs);\n"
                    "  let ev = filter(|x| x % 2.0 == 0.0, xs);\n"
                    "  let st = stencil(|w| w[-1] + w[1], wrap, xs);\n"
                    "  let g = gather(map(|i| (i * 7) % n, iota(n)), st);\n"
                    "  let r = reverse(transpose(reshape((n / 1000, 1000), g)));\n"
                    "  (fold(|a, b| a + b, 0.0, s), len(ev), i64(fold(|a, b| a + b, 0.0, fold(|a, "
                    "b| a + b, 0.0, r))),\n"
                    "   fold(|a, b| a + b, 0, scatter(reverse(iota(n)), iota(n), fill(n, 0i64))))\n"
                    "}\n"
                    "fn dp(n: i64) -> i64 {\n"
                    "  let d = rec (i in 0..=n, j in 0..=n) -> i64 {\n"
                    "    if i == 0 || j == 0 { 1 } else { (d[i - 1, j] + d[i, j - 1]) % 1000003 }\n"
                    "  };\n"
                    "  d[n, n]\n"
                    "}\n";
  CHECK_STR(run(src, "big", "200000"), "89998800000.0\n100000\n1800000\n19999900000");
  CHECK_STR(run(src, "dp", "300"), "401262");
}

UNIT_MAIN(building_arrays, map_over_equal_shapes, folds_and_segmented_folds,
          scans_along_the_innermost_dimension, gathers_and_backpermutes, scatters_and_permutes,
          index_space_changes, stencils_and_their_boundaries, filters_and_array_loops,
          nested_operations, recurrences, large_arrays_stay_fast)
