//! A tensor's layout as the rows x cols matrix redjit's row kernels take.

use candle_core::Layout;
use redjit_runtime::Matrix;

/// A tensor read as rows of its last dimension: `rows` rows of `cols`
/// elements, row r at element `offset + r * ld` of its storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rows {
    pub matrix: Matrix,
    pub offset: usize,
}

impl Rows {
    /// The rows of `layout`, where they are evenly spaced with unit stride
    /// inside a row: a contiguous tensor, or one narrowed along any dimension
    /// (the last included). `None` for other layouts (a transposed or
    /// broadcast tensor), which a caller makes contiguous first.
    pub fn of(layout: &Layout) -> Option<Rows> {
        let dims = layout.dims();
        let stride = layout.stride();
        let offset = layout.start_offset();
        let Some((&cols, lead)) = dims.split_last() else {
            return Some(Rows::dense(1, 1, offset));
        };
        if cols > 1 && stride[dims.len() - 1] != 1 {
            return None;
        }
        // The leading dimensions of more than one element, innermost first:
        // each must step over the whole of the ones inside it.
        let mut ld = None;
        let mut rows = 1usize;
        let mut span = 0usize;
        for (i, &d) in lead.iter().enumerate().rev() {
            if d == 1 {
                continue;
            }
            match ld {
                None => ld = Some(stride[i]),
                Some(_) if stride[i] != span => return None,
                Some(_) => {}
            }
            rows = rows.checked_mul(d)?;
            span = stride[i].checked_mul(d)?;
        }
        let ld = ld.unwrap_or(cols);
        if rows > 1 && ld < cols {
            return None;
        }
        Some(Rows {
            matrix: Matrix { rows, cols, ld },
            offset,
        })
    }

    fn dense(rows: usize, cols: usize, offset: usize) -> Rows {
        Rows {
            matrix: Matrix {
                rows,
                cols,
                ld: cols,
            },
            offset,
        }
    }

    /// Elements from the first row's start to the last row's end.
    pub fn extent(&self) -> usize {
        let m = self.matrix;
        if m.rows == 0 || m.cols == 0 {
            0
        } else {
            (m.rows - 1) * m.ld + m.cols
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Tensor};

    fn rows(t: &Tensor) -> Option<(usize, usize, usize, usize)> {
        Rows::of(t.layout()).map(|r| (r.matrix.rows, r.matrix.cols, r.matrix.ld, r.offset))
    }

    #[test]
    fn contiguous_and_narrowed_tensors_are_rows() -> candle_core::Result<()> {
        let t = Tensor::zeros((4, 3, 10), candle_core::DType::F32, &Device::Cpu)?;
        assert_eq!(rows(&t), Some((12, 10, 10, 0)));
        // Narrowed along the last dimension: rows keep their stride.
        assert_eq!(rows(&t.narrow(2, 2, 5)?), Some((12, 5, 10, 2)));
        // Along the first: still contiguous, from an offset.
        assert_eq!(rows(&t.narrow(0, 1, 2)?), Some((6, 10, 10, 30)));
        // Along a middle one: the rows are no longer evenly spaced.
        assert_eq!(rows(&t.narrow(1, 0, 2)?), None);
        // One row, one element, a scalar.
        assert_eq!(rows(&t.get(1)?.get(2)?), Some((1, 10, 10, 50)));
        assert_eq!(rows(&Tensor::new(3f32, &Device::Cpu)?), Some((1, 1, 1, 0)));
        Ok(())
    }

    #[test]
    fn transposed_and_broadcast_tensors_are_not() -> candle_core::Result<()> {
        let t = Tensor::zeros((6, 8), candle_core::DType::F32, &Device::Cpu)?;
        assert_eq!(rows(&t.t()?), None);
        let b =
            Tensor::zeros((1, 8), candle_core::DType::F32, &Device::Cpu)?.broadcast_as((5, 8))?;
        assert_eq!(rows(&b), None);
        // Size-1 dimensions say nothing of the spacing.
        let u = t.unsqueeze(1)?;
        assert_eq!(rows(&u), Some((6, 8, 8, 0)));
        Ok(())
    }
}
