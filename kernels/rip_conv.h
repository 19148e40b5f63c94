/*
 * rip kernels: the weighted layers, CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED, one
 * header per kernel family (each with its own source, after CMSIS-NN). The generated code
 * includes this one. Params, dims and the arithmetic they share: rip_conv_types.h; which
 * variant runs a layer: rip.codegen.kernel_choice, over the table rip.core.kernel_variants.
 */
#ifndef RIP_CONV_H
#define RIP_CONV_H

#include "rip_conv_types.h"
#include "rip_conv2d.h"
#include "rip_conv2d_fast.h"
#include "rip_conv2d_gemv.h"
#include "rip_conv2d_grouped.h"
#include "rip_depthwise.h"
#include "rip_depthwise_fast.h"
#include "rip_depthwise_inplace_fast.h"
#include "rip_depthwise_inplace_rows_fast.h"
#include "rip_depthwise_row_fast.h"
#include "rip_fully_connected.h"
#include "rip_fully_connected_fast.h"

#endif /* RIP_CONV_H */
