//! Fused CPU kernels of the encoder, applied in place on candle tensors (no tensor allocated
//! per step): bias + erf-GELU, bias + residual + LayerNorm, bias alone. The erf is a rational
//! approximation in plain arithmetic (no libm call per element), so the loops vectorise; it is
//! within 1e-6 of libm's erf (tested below).

use candle_core::{CpuStorage, InplaceOp2, InplaceOp3, Layout, Tensor};

/// erf(x) in single precision: odd rational function of x on [-4, 4] (outside it erf is ±1 to
/// float precision), the coefficients of Eigen's `generic_fast_erf_float`.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.726_142_3e-10_f32;
    p = p * x2 + 2.770_681_4e-8;
    p = p * x2 - 2.101_024e-6;
    p = p * x2 - 5.692_506_4e-5;
    p = p * x2 - 7.349_906_3e-4;
    p = p * x2 - 2.954_6e-3;
    p = p * x2 - 1.609_603_3e-2;
    let mut q = -1.456_607_2e-5_f32;
    q = q * x2 - 2.133_740_6e-4;
    q = q * x2 - 1.682_827e-3;
    q = q * x2 - 7.373_329e-3;
    q = q * x2 - 1.426_473_9e-2;
    x * p / q
}

/// GELU with the exact (erf) form: x/2 · (1 + erf(x/√2)).
#[inline(always)]
pub fn gelu_erf(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// `rows[i] = gelu(rows[i] + bias)` for every row of `data` (rows of `bias.len()`).
pub fn bias_gelu(data: &mut [f32], bias: &[f32]) {
    for row in data.chunks_exact_mut(bias.len()) {
        for (v, b) in row.iter_mut().zip(bias) {
            *v = gelu_erf(*v + b);
        }
    }
}

/// `rows[i] += bias` for every row of `data`.
pub fn bias_add(data: &mut [f32], bias: &[f32]) {
    for row in data.chunks_exact_mut(bias.len()) {
        for (v, b) in row.iter_mut().zip(bias) {
            *v += b;
        }
    }
}

/// `rows[i] = LayerNorm(rows[i] + bias + residual[i]) · gamma + beta` (mean and variance over
/// the row, in f32, as PyTorch does).
pub fn add_norm(
    data: &mut [f32],
    bias: &[f32],
    residual: &[f32],
    gamma: &[f32],
    beta: &[f32],
    eps: f32,
) {
    let n = bias.len();
    for (row, res) in data.chunks_exact_mut(n).zip(residual.chunks_exact(n)) {
        let mut sum = 0f32;
        for ((v, b), r) in row.iter_mut().zip(bias).zip(res) {
            *v += b + r;
            sum += *v;
        }
        let mean = sum / n as f32;
        let mut var = 0f32;
        for v in row.iter() {
            let d = v - mean;
            var += d * d;
        }
        let inv = 1.0 / (var / n as f32 + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}

/// The f32 slice a contiguous layout covers.
fn slice<'a>(storage: &'a CpuStorage, layout: &Layout, op: &str) -> candle_core::Result<&'a [f32]> {
    let (start, end) = layout
        .contiguous_offsets()
        .ok_or_else(|| candle_core::Error::Msg(format!("{op}: operand is not contiguous")))?;
    match storage {
        CpuStorage::F32(v) => Ok(&v[start..end]),
        _ => candle_core::bail!("{op}: operand is not f32"),
    }
}

fn slice_mut<'a>(
    storage: &'a mut CpuStorage,
    layout: &Layout,
    op: &str,
) -> candle_core::Result<&'a mut [f32]> {
    let (start, end) = layout
        .contiguous_offsets()
        .ok_or_else(|| candle_core::Error::Msg(format!("{op}: operand is not contiguous")))?;
    match storage {
        CpuStorage::F32(v) => Ok(&mut v[start..end]),
        _ => candle_core::bail!("{op}: operand is not f32"),
    }
}

/// Checks that `data` is whole rows of `width`.
fn check_rows(data: &[f32], width: usize, op: &str) -> candle_core::Result<()> {
    if width == 0 || data.len() % width != 0 {
        candle_core::bail!("{op}: {} values are not rows of {width}", data.len());
    }
    Ok(())
}

struct BiasGelu;

impl InplaceOp2 for BiasGelu {
    fn name(&self) -> &'static str {
        "bias-gelu"
    }
    fn cpu_fwd(
        &self,
        dst: &mut CpuStorage,
        dst_l: &Layout,
        b: &CpuStorage,
        b_l: &Layout,
    ) -> candle_core::Result<()> {
        let bias = slice(b, b_l, "bias-gelu")?;
        let data = slice_mut(dst, dst_l, "bias-gelu")?;
        check_rows(data, bias.len(), "bias-gelu")?;
        bias_gelu(data, bias);
        Ok(())
    }
}

struct BiasAdd;

impl InplaceOp2 for BiasAdd {
    fn name(&self) -> &'static str {
        "bias-add"
    }
    fn cpu_fwd(
        &self,
        dst: &mut CpuStorage,
        dst_l: &Layout,
        b: &CpuStorage,
        b_l: &Layout,
    ) -> candle_core::Result<()> {
        let bias = slice(b, b_l, "bias-add")?;
        let data = slice_mut(dst, dst_l, "bias-add")?;
        check_rows(data, bias.len(), "bias-add")?;
        bias_add(data, bias);
        Ok(())
    }
}

/// Sources: the residual (rows like dst) and the parameters `(3, n)`: bias, gamma, beta.
struct AddNorm {
    eps: f32,
}

impl InplaceOp3 for AddNorm {
    fn name(&self) -> &'static str {
        "add-norm"
    }
    fn cpu_fwd(
        &self,
        dst: &mut CpuStorage,
        dst_l: &Layout,
        r: &CpuStorage,
        r_l: &Layout,
        p: &CpuStorage,
        p_l: &Layout,
    ) -> candle_core::Result<()> {
        let name = "add-norm";
        let (residual, params) = (slice(r, r_l, name)?, slice(p, p_l, name)?);
        let n = params.len() / 3;
        let data = slice_mut(dst, dst_l, name)?;
        check_rows(data, n, name)?;
        if residual.len() != data.len() || params.len() != 3 * n {
            candle_core::bail!("{name}: operand sizes differ");
        }
        let (bias, rest) = params.split_at(n);
        let (gamma, beta) = rest.split_at(n);
        add_norm(data, bias, residual, gamma, beta, self.eps);
        Ok(())
    }
}

/// A dense layer's weights: `x · weightᵀ + bias`.
pub struct Dense {
    /// `(in, out)`: the transposed weight, made contiguous once at load.
    weight_t: Tensor,
    bias: Tensor,
}

impl Dense {
    /// From PyTorch's `(out, in)` weight and `(out)` bias.
    pub fn new(weight: &Tensor, bias: Tensor) -> candle_core::Result<Self> {
        Ok(Dense {
            weight_t: weight.t()?.contiguous()?,
            bias: bias.contiguous()?,
        })
    }

    /// `x · Wᵀ + b` (bias added in place).
    pub fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let y = x.matmul(&self.weight_t)?;
        y.inplace_op2(&self.bias, &BiasAdd)?;
        Ok(y)
    }

    /// `gelu(x · Wᵀ + b)` (in place after the product).
    pub fn forward_gelu(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let y = x.matmul(&self.weight_t)?;
        y.inplace_op2(&self.bias, &BiasGelu)?;
        Ok(y)
    }

    /// `LayerNorm(x · Wᵀ + b + residual)` (in place after the product).
    pub fn forward_add_norm(
        &self,
        x: &Tensor,
        residual: &Tensor,
        norm: &Norm,
    ) -> candle_core::Result<Tensor> {
        let y = x.matmul(&self.weight_t)?;
        let residual = residual.contiguous()?;
        y.inplace_op3(&residual, &norm.params, &AddNorm { eps: norm.eps })?;
        Ok(y)
    }
}

/// The LayerNorm after a dense layer, with that layer's bias: parameters `(3, n)` (bias,
/// gamma, beta).
pub struct Norm {
    params: Tensor,
    eps: f32,
}

impl Norm {
    pub fn new(
        dense: &Dense,
        gamma: &Tensor,
        beta: &Tensor,
        eps: f32,
    ) -> candle_core::Result<Self> {
        Ok(Norm {
            params: Tensor::stack(&[&dense.bias, gamma, beta], 0)?.contiguous()?,
            eps,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf in f64 by its Taylor series (|x| <= 3) and the continued fraction of erfc beyond:
    /// an independent reference (Rust's std has no erf).
    fn erf64(x: f64) -> f64 {
        let a = x.abs();
        let v = if a <= 3.0 {
            let (mut term, mut sum, mut n) = (a, a, 0.0);
            loop {
                n += 1.0;
                term *= -a * a / n;
                let add = term / (2.0 * n + 1.0);
                sum += add;
                if add.abs() < 1e-17 {
                    break;
                }
            }
            sum * 2.0 / std::f64::consts::PI.sqrt()
        } else {
            // erfc(a) = exp(-a²)/√π · 1/(a + 1/2/(a + 1/(a + 3/2/(a + 2/(a + ...)))))
            let mut f = a;
            for k in (1..60).rev() {
                f = a + (k as f64 / 2.0) / f;
            }
            1.0 - (-a * a).exp() / std::f64::consts::PI.sqrt() / f
        };
        v.copysign(x)
    }

    #[test]
    fn the_reference_erf_is_right_at_known_points() {
        // erf(0.5), erf(1), erf(2), erf(3.5) to 15 digits.
        for (x, want) in [
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (3.5, 0.999_999_256_901_627_7),
        ] {
            assert!((erf64(x) - want).abs() < 1e-13, "erf({x}) = {}", erf64(x));
            assert!((erf64(-x) + want).abs() < 1e-13);
        }
    }

    #[test]
    fn erf_is_within_1e_6_of_the_exact_value() {
        let mut worst = (0f64, 0f32);
        let mut x = -8.0f32;
        while x <= 8.0 {
            let err = (erf(x) as f64 - erf64(x as f64)).abs();
            if err > worst.0 {
                worst = (err, x);
            }
            x += 1e-4;
        }
        assert!(worst.0 < 1e-6, "max error {} at {}", worst.0, worst.1);
        assert_eq!(erf(0.0), 0.0);
        assert!((erf(20.0) - 1.0).abs() < 1e-6 && (erf(-20.0) + 1.0).abs() < 1e-6);
        assert!(erf(f32::MAX) <= 1.0 && erf(f32::MIN) >= -1.0);
    }

    #[test]
    fn gelu_and_add_norm_match_their_definitions() {
        let bias = [0.5f32, -1.0, 2.0];
        let mut data = [0.1f32, 0.2, -0.3, 1.0, -2.0, 3.0];
        let orig = data;
        bias_gelu(&mut data, &bias);
        for (i, v) in data.iter().enumerate() {
            let z = (orig[i] + bias[i % 3]) as f64;
            let want = 0.5 * z * (1.0 + erf64(z / std::f64::consts::SQRT_2));
            assert!((*v as f64 - want).abs() < 1e-6, "{v} vs {want}");
        }
        let residual = [1.0f32, 1.0, 1.0, 0.0, 0.0, 0.0];
        let (gamma, beta) = ([1.0f32, 2.0, 0.5], [0.0f32, 1.0, -1.0]);
        let mut data = orig;
        add_norm(&mut data, &bias, &residual, &gamma, &beta, 1e-12);
        for r in 0..2 {
            let row: Vec<f64> = (0..3)
                .map(|j| (orig[r * 3 + j] + bias[j] + residual[r * 3 + j]) as f64)
                .collect();
            let mean = row.iter().sum::<f64>() / 3.0;
            let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 3.0;
            for j in 0..3 {
                let want = (row[j] - mean) / var.sqrt() * gamma[j] as f64 + beta[j] as f64;
                assert!((data[r * 3 + j] as f64 - want).abs() < 1e-5);
            }
        }
    }

    #[test]
    fn the_in_place_ops_check_their_operands() {
        let d = candle_core::Device::Cpu;
        let w = Tensor::new(&[[1f32, 0.0], [0.0, 1.0], [1.0, 1.0]], &d).unwrap();
        let dense = Dense::new(&w, Tensor::new(&[0f32, 1.0, -1.0], &d).unwrap()).unwrap();
        let x = Tensor::new(&[[1f32, 2.0]], &d).unwrap();
        let y = dense.forward(&x).unwrap().to_vec2::<f32>().unwrap();
        assert_eq!(y, vec![vec![1.0, 3.0, 2.0]]);
        let g = dense.forward_gelu(&x).unwrap().to_vec2::<f32>().unwrap();
        assert!((g[0][0] - gelu_erf(1.0)).abs() < 1e-7);
        // A bias that does not divide the rows is an error, not a panic.
        let bad = Tensor::new(&[1f32, 2.0, 3.0, 4.0], &d).unwrap();
        let out = x.matmul(&w.t().unwrap()).unwrap();
        assert!(out.inplace_op2(&bad, &BiasAdd).is_err());
    }
}
