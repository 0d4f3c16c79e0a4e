//! As candle-core's custom_op.rs would hold it: UgIOp1, an in-place op whose kernel the device
//! compiled at run time, and its InplaceOp1 (generated, a child module: it reads the fields).
//! The mock backends that run it (cuda, metal) record the kernel's name.
#[path = "../../../generated/rust/ug_op.rs"]
pub mod ug_op;

/// A kernel the device compiled at run time, as a mock backend holds it: its name.
#[derive(Debug, Clone, PartialEq)]
pub struct MockFunction(pub &'static str);

pub struct UgIOp1 {
    name: &'static str,
    #[allow(dead_code)] // read by the hooks of the backends that run it (cuda, metal)
    func: MockFunction,
}

impl UgIOp1 {
    pub fn new(name: &'static str) -> Self {
        Self { name, func: MockFunction(name) }
    }
}

#[cfg(any(feature = "cuda", feature = "metal"))]
impl<D: crate::mock::MockDevice> ug_op::UgStorage for crate::mock::MockStorage<D> {
    type Function = MockFunction;

    fn ug_fwd(&mut self, func: &MockFunction, layout: &crate::Layout) -> crate::Result<()> {
        self.calls.push(format!("{}.ug:{}:{}", D::BACKEND, func.0, layout.shape().elem_count()));
        Ok(())
    }
}
