//! Convolution parameters (candle-core's conv.rs); the dispatch only passes them on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ParamsConv1D {
    pub padding: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ParamsConvTranspose1D {
    pub padding: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ParamsConv2D {
    pub padding: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ParamsConvTranspose2D {
    pub padding: usize,
}
