//! What candle-core's utils.rs gives the generated Device methods: whether a backend is
//! available, and the host's thread pool (here, the calling thread).

pub fn cuda_is_available() -> bool {
    cfg!(feature = "cuda")
}

pub fn metal_is_available() -> bool {
    cfg!(feature = "metal")
}

pub fn rocm_is_available() -> bool {
    cfg!(feature = "rocm")
}

// A backend of the registry with no mock here yet answers false (see build.rs).
include!(concat!(env!("OUT_DIR"), "/unmocked_utils.rs"));

pub fn with_threadpool<F: FnOnce() -> R + Send, R: Send>(f: F) -> R {
    f()
}

/// Returns an `Error::Msg` of the formatted message (candle-core's bail!).
#[macro_export]
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::Error::Msg(format!($($arg)*)).bt())
    };
}
