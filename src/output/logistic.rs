//! L2-regularized logistic regression over binary features (a session's factor values),
//! fitted by Newton's method. Sessions with the same values and outcome are one weighted
//! row, and each row touches only the features it holds, so a fit over 100,000 sessions
//! takes a few passes over a few thousand short rows rather than hundreds of passes over a
//! dense matrix.

use std::collections::HashMap;

/// Newton steps at most; a fit converges in about ten.
const MAX_STEPS: usize = 100;
/// A step that changes no coefficient by more than this ends the fit.
const TOLERANCE: f64 = 1e-9;

/// A fitted model: its coefficients, the intercept first, then one weight per feature.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    theta: Vec<f64>,
}

/// One distinct row: the features it holds, and how many sessions with those features
/// failed and succeeded.
struct Row<'a> {
    features: &'a [usize],
    failed: f64,
    succeeded: f64,
}

/// Fits `failed` on `rows` (each the indices, below `features`, of the features a session
/// holds), minimizing the log loss plus `alpha / 2` times the squared weights (the
/// intercept unpenalized). `None` when the rows hold one outcome only.
pub fn fit(rows: &[&[usize]], failed: &[bool], features: usize, alpha: f64) -> Option<Model> {
    if !failed.contains(&true) || !failed.contains(&false) {
        return None;
    }
    let rows = distinct_rows(rows, failed);
    let dims = features + 1;
    // Coefficient 0 is the intercept, 1 + j the weight of feature j.
    let mut theta = vec![0.0; dims];
    let mut current = loss(&rows, &theta, alpha);
    for _ in 0..MAX_STEPS {
        let (gradient, mut hessian) = gradient_and_hessian(&rows, &theta, alpha);
        let Some(step) = solve(&mut hessian, &gradient, dims) else { break };
        // Halve the step until the loss falls; a full Newton step almost always does.
        let mut scale = 1.0;
        let mut next = theta.clone();
        let accepted = loop {
            for (value, (old, delta)) in next.iter_mut().zip(theta.iter().zip(&step)) {
                *value = old - scale * delta;
            }
            let candidate = loss(&rows, &next, alpha);
            if candidate <= current {
                break Some(candidate);
            }
            scale /= 2.0;
            if scale < 1e-10 {
                break None;
            }
        };
        let Some(candidate) = accepted else { break };
        let largest_change = step.iter().map(|d| (scale * d).abs()).fold(0.0, f64::max);
        (theta, current) = (next, candidate);
        if largest_change < TOLERANCE {
            break;
        }
    }
    Some(Model { theta })
}

impl Model {
    /// The probability of failure of a session holding `features`.
    pub fn probability(&self, features: &[usize]) -> f64 {
        sigmoid(linear(&self.theta, features))
    }
}

fn distinct_rows<'a>(rows: &[&'a [usize]], failed: &[bool]) -> Vec<Row<'a>> {
    let mut index: HashMap<&[usize], usize> = HashMap::new();
    let mut distinct: Vec<Row<'a>> = Vec::new();
    for (&features, &failed) in rows.iter().zip(failed) {
        let at = *index.entry(features).or_insert_with(|| {
            distinct.push(Row { features, failed: 0.0, succeeded: 0.0 });
            distinct.len() - 1
        });
        if failed {
            distinct[at].failed += 1.0;
        } else {
            distinct[at].succeeded += 1.0;
        }
    }
    distinct
}

fn linear(theta: &[f64], features: &[usize]) -> f64 {
    theta[0] + features.iter().map(|&j| theta[1 + j]).sum::<f64>()
}

fn loss(rows: &[Row], theta: &[f64], alpha: f64) -> f64 {
    let penalty = 0.5 * alpha * theta[1..].iter().map(|w| w * w).sum::<f64>();
    // -log σ(z) = softplus(-z) for a failure, -log(1 - σ(z)) = softplus(z) for a success.
    rows.iter()
        .map(|row| {
            let z = linear(theta, row.features);
            row.failed * softplus(-z) + row.succeeded * softplus(z)
        })
        .sum::<f64>()
        + penalty
}

/// The loss's gradient and Hessian (row-major, `dims` × `dims`) at `theta`.
fn gradient_and_hessian(rows: &[Row], theta: &[f64], alpha: f64) -> (Vec<f64>, Vec<f64>) {
    let dims = theta.len();
    let mut gradient: Vec<f64> = theta.iter().map(|w| alpha * w).collect();
    gradient[0] = 0.0;
    let mut hessian = vec![0.0; dims * dims];
    for j in 1..dims {
        hessian[j * dims + j] = alpha;
    }
    let mut coordinates = Vec::new();
    for row in rows {
        let p = sigmoid(linear(theta, row.features));
        let residual = (row.failed + row.succeeded) * p - row.failed;
        let curvature = (row.failed + row.succeeded) * p * (1.0 - p);
        coordinates.clear();
        coordinates.push(0);
        coordinates.extend(row.features.iter().map(|j| 1 + j));
        for &a in &coordinates {
            gradient[a] += residual;
            for &b in &coordinates {
                hessian[a * dims + b] += curvature;
            }
        }
    }
    (gradient, hessian)
}

/// Solves `matrix · x = rhs` for a symmetric positive definite `matrix` by its Cholesky
/// factor, computed in place; `None` when the matrix is not positive definite.
fn solve(matrix: &mut [f64], rhs: &[f64], n: usize) -> Option<Vec<f64>> {
    for j in 0..n {
        let diagonal = matrix[j * n + j] - (0..j).map(|k| matrix[j * n + k].powi(2)).sum::<f64>();
        if diagonal <= 0.0 || !diagonal.is_finite() {
            return None;
        }
        let pivot = diagonal.sqrt();
        matrix[j * n + j] = pivot;
        for i in j + 1..n {
            let dot: f64 = (0..j).map(|k| matrix[i * n + k] * matrix[j * n + k]).sum();
            matrix[i * n + j] = (matrix[i * n + j] - dot) / pivot;
        }
    }
    let mut x = rhs.to_vec();
    for i in 0..n {
        x[i] = (x[i] - (0..i).map(|k| matrix[i * n + k] * x[k]).sum::<f64>()) / matrix[i * n + i];
    }
    for i in (0..n).rev() {
        x[i] = (x[i] - (i + 1..n).map(|k| matrix[k * n + i] * x[k]).sum::<f64>()) / matrix[i * n + i];
    }
    Some(x)
}

fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// `ln(1 + e^z)` without overflow.
fn softplus(z: f64) -> f64 {
    if z > 0.0 { z + (-z).exp().ln_1p() } else { z.exp().ln_1p() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sessions holding feature 0 fail three times in four, the others one in four;
    /// feature 1 goes with neither.
    fn sessions() -> (Vec<Vec<usize>>, Vec<bool>) {
        let mut rows = Vec::new();
        let mut failed = Vec::new();
        for i in 0..400 {
            let mut features = Vec::new();
            if i % 2 == 0 {
                features.push(0);
            }
            if i % 3 == 0 {
                features.push(1);
            }
            failed.push(if i % 2 == 0 { i % 8 != 0 } else { i % 8 == 1 });
            rows.push(features);
        }
        (rows, failed)
    }

    #[test]
    fn the_fit_is_where_the_penalized_loss_is_flat() {
        let (rows, failed) = sessions();
        let views: Vec<&[usize]> = rows.iter().map(Vec::as_slice).collect();
        let model = fit(&views, &failed, 2, 1.0).unwrap();
        let (gradient, _) = gradient_and_hessian(&distinct_rows(&views, &failed), &model.theta, 1.0);
        assert!(gradient.iter().all(|g| g.abs() < 1e-6), "{gradient:?}");
        // Log-odds 3:1 against 1:3 is a weight of ln 9 ≈ 2.2 before the penalty pulls it in.
        assert!(model.theta[1] > 1.8 && model.theta[1] < 2.2, "{model:?}");
        assert!(model.theta[2].abs() < 0.3, "{model:?}");
        assert!(model.probability(&[0]) > 0.7 && model.probability(&[]) < 0.3);
    }

    #[test]
    fn a_feature_that_always_fails_gets_a_finite_weight() {
        let rows: Vec<&[usize]> = vec![&[0], &[0], &[], &[], &[], &[]];
        let failed = [true, true, false, false, true, false];
        let model = fit(&rows, &failed, 1, 1.0).unwrap();
        assert!(model.theta[1].is_finite() && model.theta[1] > 0.5, "{model:?}");
    }

    #[test]
    fn one_outcome_only_fits_nothing() {
        assert_eq!(fit(&[&[0], &[]], &[true, true], 1, 1.0), None);
    }
}
