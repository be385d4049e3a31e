#pragma once
// The standard normal CDF and its inverse, in closed form (no library distributions), so sampled values
// are the same on every platform.
namespace nvl::emu {

double normal_cdf(double z);
// Inverse CDF for p in (0, 1) (Acklam's rational approximation refined by one Halley step).
double normal_quantile(double p);

}  // namespace nvl::emu
