//! Nested data parallelism: programs written with arrays computed inside
//! scalar functions, flattened by the lifting transformation
//! (`trafo::lift`, the sequences thesis ch.4).

use accelerate::prelude::*;

fn matrix(rows: usize, cols: usize) -> Matrix<f64> {
    let data: Vec<f64> = (0..rows * cols).map(|k| ((k * 7919) % 23) as f64 - 11.0).collect();
    Array::from_vec(Snoc(Snoc(Z, rows as i64), cols as i64), data).unwrap()
}

fn vector(n: usize) -> Vector<f64> {
    Vector::from_elems((0..n).map(|k| ((k * 31) % 7) as f64 * 0.5 - 1.0).collect())
}

fn dotp(a: &Acc<Vector<f64>>, b: &Acc<Vector<f64>>) -> Acc<Scalar<f64>> {
    a.zip_with(b, |x, y| x * y).fold(0.0, |s, t| s + t)
}

#[test]
fn matrix_vector_product_as_a_generate_of_dotp_of_rows() {
    let (rows, cols) = (5, 7);
    let m = use_array(matrix(rows, cols));
    let v = use_array(vector(cols));
    let (n, _) = unindex2(m.shape());
    let r = generate(index1(n), |ix| {
        let i = unindex1(ix);
        let row = m.slice(any_dims::<Z>().fixed(i).all());
        dotp(&row, &v).the()
    });
    println!("{}", accelerate::explain(&r).unwrap());
    let got = run(&r).unwrap().to_vec();
    let (mm, vv) = (matrix(rows, cols).to_vec(), vector(cols).to_vec());
    let want: Vec<f64> = (0..rows).map(|i| (0..cols).map(|j| mm[i * cols + j] * vv[j]).sum()).collect();
    assert_eq!(got, want);
}
