//! The op enums (candle-core's op.rs), with the registry's ops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Exp,
    Neg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Mul,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Lt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    Sum,
    Max,
}

/// A unary op as a type (candle-core's UnaryOpT): Storage::unary_impl::<B> is generic over it.
pub trait UnaryOpT {
    const NAME: &'static str;
    const OP: UnaryOp;
}

/// A binary op as a type (candle-core's BinaryOpT).
pub trait BinaryOpT {
    const NAME: &'static str;
    const OP: BinaryOp;
}

pub struct Exp;

impl UnaryOpT for Exp {
    const NAME: &'static str = "exp";
    const OP: UnaryOp = UnaryOp::Exp;
}

pub struct Add;

impl BinaryOpT for Add {
    const NAME: &'static str = "add";
    const OP: BinaryOp = BinaryOp::Add;
}

pub struct Mul;

impl BinaryOpT for Mul {
    const NAME: &'static str = "mul";
    const OP: BinaryOp = BinaryOp::Mul;
}
