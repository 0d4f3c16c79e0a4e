//! The generated switches (switches.rs): off by default, each set and read back on its own,
//! per backend (one test touches them: the statics are the process's).

#[cfg(feature = "cuda")]
#[test]
fn cuda_switches_start_off_and_round_trip_each_alone() {
    use crate::switches::cuda as s;
    let read = || {
        [
            s::gemm_reduced_precision_f32(),
            s::gemm_reduced_precision_f16(),
            s::gemm_reduced_precision_bf16(),
            s::conv_reduced_precision_f32(),
            s::autotune(),
        ]
    };
    assert_eq!(read(), [false; 5]);
    s::set_gemm_reduced_precision_f16(true);
    assert_eq!(read(), [false, true, false, false, false]);
    s::set_autotune(true);
    s::set_gemm_reduced_precision_f16(false);
    assert_eq!(read(), [false, false, false, false, true]);
    s::set_autotune(false);
}

#[cfg(all(feature = "cuda", feature = "rocm"))]
#[test]
fn each_backend_has_its_own_switches() {
    crate::switches::rocm::set_conv_reduced_precision_f32(true);
    assert!(!crate::switches::cuda::conv_reduced_precision_f32());
    assert!(crate::switches::rocm::conv_reduced_precision_f32());
    crate::switches::rocm::set_conv_reduced_precision_f32(false);
}
