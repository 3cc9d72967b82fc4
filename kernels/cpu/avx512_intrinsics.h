// Internal: <immintrin.h> for the files built with AVX-512 flags. GCC 12 flags the
// _mm512_undefined_* pass-through operands inside its own AVX-512 intrinsics as uninitialised
// (GCC bug 105593), not anything of ours; the pragma covers the rest of the including file.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
