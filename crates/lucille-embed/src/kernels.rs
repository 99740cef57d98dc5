//! CPU kernels of the encoder, applied in place on reused buffers (nothing allocated per
//! step): the matrix product (`gemm`), bias + erf-GELU, bias + residual + LayerNorm, bias
//! alone, LayerNorm, softmax. The erf is a rational approximation in plain arithmetic (no libm
//! call per element), so the loops vectorise; it is within 1e-6 of libm's erf (tested below).

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

/// Where a matrix sits in a buffer: the offset of its first element and its row and column
/// strides (in elements). Attention reads each head's query, key and value in place this way:
/// columns of the packed QKV rows, no copy.
#[derive(Debug, Clone, Copy)]
pub struct Mat {
    pub offset: usize,
    pub rs: usize,
    pub cs: usize,
}

impl Mat {
    /// A contiguous row-major matrix of `cols` columns at `offset`.
    pub fn rows(offset: usize, cols: usize) -> Self {
        Mat {
            offset,
            rs: cols,
            cs: 1,
        }
    }

    /// Whether a `rows x cols` matrix so placed lies inside a buffer of `len` elements.
    fn fits(&self, rows: usize, cols: usize, len: usize) -> bool {
        if rows == 0 || cols == 0 {
            return self.offset <= len;
        }
        let last = (rows - 1)
            .checked_mul(self.rs)
            .and_then(|r| {
                (cols - 1)
                    .checked_mul(self.cs)
                    .and_then(|c| r.checked_add(c))
            })
            .and_then(|rc| rc.checked_add(self.offset));
        matches!(last, Some(last) if last < len)
            && isize::try_from(self.rs).is_ok()
            && isize::try_from(self.cs).is_ok()
    }
}

/// A matrix product refused: one of its `m x k . k x n` operands lies outside its buffer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("matrix product {m}x{k} . {k}x{n}: an operand lies outside its buffer")]
pub struct MatmulError {
    pub m: usize,
    pub k: usize,
    pub n: usize,
}

/// `dst (m x n) = lhs (m x k) . rhs (k x n)`, single-threaded, on the `gemm` crate (candle's
/// own matrix-product engine, with its AVX-512 / AVX2 / NEON kernels chosen at run time).
/// Called directly rather than through candle so that products write into buffers reused from
/// one batch to the next, and read strided operands in place: candle allocates (and the kernel
/// zeroes) a fresh tensor per product and needs contiguous copies of every attention head.
/// Every operand is checked to lie inside its slice before the unsafe call.
pub fn matmul(
    dst: &mut [f32],
    d: Mat,
    lhs: &[f32],
    l: Mat,
    rhs: &[f32],
    r: Mat,
    (m, k, n): (usize, usize, usize),
) -> Result<(), MatmulError> {
    if !(d.fits(m, n, dst.len()) && l.fits(m, k, lhs.len()) && r.fits(k, n, rhs.len())) {
        return Err(MatmulError { m, k, n });
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        for i in 0..m {
            for j in 0..n {
                dst[d.offset + i * d.rs + j * d.cs] = 0.0;
            }
        }
        return Ok(());
    }
    // SAFETY: the three regions were checked above to lie inside their slices (every element
    // the product touches is at offset + i*rs + j*cs within the stated sizes, strides fit
    // isize); `dst` is borrowed mutably, so it cannot overlap `lhs` or `rhs`; `read_dst` is
    // false, so `dst` is written before it is read.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr().add(d.offset),
            d.cs as isize,
            d.rs as isize,
            false,
            lhs.as_ptr().add(l.offset),
            l.cs as isize,
            l.rs as isize,
            rhs.as_ptr().add(r.offset),
            r.cs as isize,
            r.rs as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
    Ok(())
}

/// Softmax of a row in place (max subtracted first, as PyTorch does).
pub fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0f32;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    let inv = 1.0 / sum;
    for v in row.iter_mut() {
        *v *= inv;
    }
}

/// `row = LayerNorm(row) . gamma + beta`.
pub fn layer_norm(data: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = gamma.len();
    for row in data.chunks_exact_mut(n) {
        let mean = row.iter().sum::<f32>() / n as f32;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
            *v = (*v - mean) * inv * g + b;
        }
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

    /// The product by definition, in f64.
    fn naive(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut out = vec![0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                out[i * n + j] = (0..k)
                    .map(|x| a[i * k + x] as f64 * b[x * n + j] as f64)
                    .sum();
            }
        }
        out
    }

    #[test]
    fn matmul_matches_the_definition_contiguous_and_strided() {
        let (m, k, n) = (7usize, 5usize, 3usize);
        let a: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i as f32 * 0.11).cos()).collect();
        let want = naive(&a, &b, m, k, n);
        let mut dst = vec![f32::NAN; m * n];
        matmul(
            &mut dst,
            Mat::rows(0, n),
            &a,
            Mat::rows(0, k),
            &b,
            Mat::rows(0, n),
            (m, k, n),
        )
        .unwrap();
        for (x, y) in dst.iter().zip(&want) {
            assert!((*x as f64 - y).abs() < 1e-5, "{x} vs {y}");
        }
        // The same product with b stored transposed (read with swapped strides), written into
        // the middle columns of a wider buffer whose other columns stay untouched.
        let bt: Vec<f32> = (0..n * k).map(|i| b[(i % k) * n + i / k]).collect();
        let mut wide = vec![-7f32; m * (n + 4)];
        let d = Mat {
            offset: 2,
            rs: n + 4,
            cs: 1,
        };
        matmul(
            &mut wide,
            d,
            &a,
            Mat::rows(0, k),
            &bt,
            Mat {
                offset: 0,
                rs: 1,
                cs: k,
            },
            (m, k, n),
        )
        .unwrap();
        for i in 0..m {
            for j in 0..n + 4 {
                let v = wide[i * (n + 4) + j];
                if (2..2 + n).contains(&j) {
                    assert!((v as f64 - want[i * n + j - 2]).abs() < 1e-5);
                } else {
                    assert_eq!(v, -7.0);
                }
            }
        }
    }

    #[test]
    fn matmul_refuses_operands_outside_their_buffers() {
        let a = vec![1f32; 6];
        let mut dst = vec![0f32; 4];
        // 2x3 . 3x2 needs 6 + 6 + 4; rhs has only 5.
        let err = matmul(
            &mut dst,
            Mat::rows(0, 2),
            &a,
            Mat::rows(0, 3),
            &a[..5],
            Mat::rows(0, 2),
            (2, 3, 2),
        );
        assert!(err.is_err());
        let err = matmul(
            &mut dst,
            Mat::rows(1, 2),
            &a,
            Mat::rows(0, 3),
            &a,
            Mat::rows(0, 2),
            (2, 3, 2),
        );
        assert!(err.is_err(), "dst offset past the end");
        let huge = Mat {
            offset: 0,
            rs: usize::MAX / 2,
            cs: 1,
        };
        assert!(matmul(
            &mut dst,
            huge,
            &a,
            Mat::rows(0, 3),
            &a,
            Mat::rows(0, 2),
            (2, 3, 2)
        )
        .is_err());
        matmul(
            &mut dst,
            Mat::rows(0, 2),
            &a,
            Mat::rows(0, 3),
            &a,
            Mat::rows(0, 2),
            (2, 3, 2),
        )
        .unwrap();
        assert_eq!(dst, vec![3.0; 4]);
    }

    #[test]
    fn softmax_and_layer_norm_match_their_definitions() {
        let mut row = [1f32, 2.0, 3.0, -1000.0];
        softmax(&mut row);
        let e: Vec<f64> = [1f64, 2.0, 3.0].iter().map(|v| v.exp()).collect();
        let s: f64 = e.iter().sum();
        for i in 0..3 {
            assert!((row[i] as f64 - e[i] / s).abs() < 1e-6);
        }
        assert_eq!(row[3], 0.0);
        let mut data = [1f32, 2.0, 4.0];
        layer_norm(&mut data, &[1.0, 1.0, 2.0], &[0.0, 0.5, 0.0], 1e-12);
        let mean = 7.0 / 3.0;
        let sd = ((1.0f64 - mean).powi(2) + (2.0 - mean).powi(2) + (4.0 - mean).powi(2)) / 3.0;
        let sd = sd.sqrt();
        let want = [
            (1.0 - mean) / sd,
            (2.0 - mean) / sd + 0.5,
            2.0 * (4.0 - mean) / sd,
        ];
        for (x, y) in data.iter().zip(want) {
            assert!((*x as f64 - y).abs() < 1e-5);
        }
    }
}
