#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    F64(f64),
    U8(u8),
}
