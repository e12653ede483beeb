/* The CUDA table of the input modules' kernels (cuda_vsn.cu, cuda_sn.cu, cuda_kan.cu). */
#include "backend/kit.h"
#include "model/inops.h"

extern "C" const vp_inops vp_inops_cuda = VP_INOPS_TABLE(vp_cuda);
