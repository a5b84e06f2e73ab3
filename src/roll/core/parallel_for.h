#pragma once
// at::parallel_for for rollcpp code. ATen's OpenMP backend (Debian's libtorch) implements it as
// a `#pragma omp parallel` inside a header template, compiled into the caller's file: a file
// built without -fopenmp runs every parallel_for on one thread, silently. Include this header
// instead of <ATen/Parallel.h> where parallel_for is called, and link the target to
// OpenMP::OpenMP_CXX.
#include <ATen/Parallel.h>

#if AT_PARALLEL_OPENMP && !defined(_OPENMP)
#error "at::parallel_for needs -fopenmp in this file: link its target to OpenMP::OpenMP_CXX"
#endif
