# KESTREL_CHECK_CUDA
# --with-cuda[=PATH]  default auto: build the CUDA engine when nvcc compiles a test kernel.
# --with-cuda=yes (or a PATH) with no working nvcc is a hard error; --without-cuda skips it.
# --with-cuda-arch=ARCH (default sm_90).
# Sets NVCC, CUDA_PATH, CUDA_ARCH, CUDA_LIBS; AM_CONDITIONAL HAVE_CUDA.
AC_DEFUN([KESTREL_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=PATH@:>@], [build the CUDA engine (default: auto, when nvcc works)])],
    [], [with_cuda=auto])
  AC_ARG_WITH([cuda-arch],
    [AS_HELP_STRING([--with-cuda-arch=ARCH], [GPU architecture for nvcc -arch (default: sm_90)])],
    [CUDA_ARCH=$withval], [CUDA_ARCH=sm_90])
  AC_ARG_VAR([NVCC], [CUDA compiler])
  AC_ARG_VAR([NVCCFLAGS], [extra flags for nvcc])

  kestrel_have_cuda=no
  kestrel_cuda_summary="no (--without-cuda)"
  AS_IF([test "x$with_cuda" != xno], [
    AS_CASE([$with_cuda],
      [yes|auto], [CUDA_PATH=""],
      [CUDA_PATH=$with_cuda])
    AS_IF([test -z "$NVCC"], [
      AS_IF([test -n "$CUDA_PATH"],
        [AC_PATH_PROG([NVCC], [nvcc], [], [$CUDA_PATH/bin])],
        [AC_PATH_PROG([NVCC], [nvcc], [], [$PATH:/usr/local/cuda/bin])])
    ])
    AS_IF([test -n "$NVCC"], [
      AS_IF([test -z "$CUDA_PATH"], [CUDA_PATH=`dirname "$NVCC"`; CUDA_PATH=`dirname "$CUDA_PATH"`])
      AC_MSG_CHECKING([whether $NVCC compiles for $CUDA_ARCH])
      cat > conftest.cu <<'_KEOF'
__global__ void k(float *x) { x@<:@threadIdx.x@:>@ += 1.0f; }
int main(void) { float *d = 0; cudaError_t e = cudaMalloc(&d, 4); (void)e; k<<<1, 1>>>(d); return 0; }
_KEOF
      AS_IF([$NVCC -arch=$CUDA_ARCH -o conftest.cuda conftest.cu >&AS_MESSAGE_LOG_FD 2>&1],
        [kestrel_have_cuda=yes; AC_MSG_RESULT([yes])],
        [AC_MSG_RESULT([no])])
      rm -f conftest.cu conftest.cuda
    ])
    AS_IF([test "x$kestrel_have_cuda" = xno && test "x$with_cuda" != xauto],
      [AC_MSG_ERROR([--with-cuda=$with_cuda was given but nvcc is missing or cannot compile for $CUDA_ARCH (see config.log)])])
    AS_IF([test "x$kestrel_have_cuda" = xyes],
      [kestrel_cuda_summary="yes ($NVCC, -arch=$CUDA_ARCH)"],
      [kestrel_cuda_summary="no (nvcc not found or not working; auto)"])
  ])
  AS_IF([test -d "$CUDA_PATH/lib64"], [CUDA_LIBDIR="$CUDA_PATH/lib64"], [CUDA_LIBDIR="$CUDA_PATH/lib"])
  CUDA_LIBS="-L$CUDA_LIBDIR -lcudart"
  AC_SUBST([CUDA_PATH])
  AC_SUBST([CUDA_ARCH])
  AC_SUBST([CUDA_LIBS])
  AC_SUBST([CUDA_LIBDIR])
  AM_CONDITIONAL([HAVE_CUDA], [test "x$kestrel_have_cuda" = xyes])
])
