//! Comm: each collective reaches the communicator's backend with that backend's storages; dtypes
//! that differ, ranks outside the group, reductions a dtype lacks and storages of another
//! backend get an error naming the op, the backend and the rank.
use super::{backend, devices, last, zeros};

/// The devices whose backend has a communicator (Metal, the rust target's alone, has none).
fn comm_devices() -> Vec<Device> {
    devices(false).into_iter().filter(|d| !matches!(d, Device::Metal(_))).collect()
}
use crate::{Comm, DType, Device, Error, Reduction};

fn comm(device: &Device, rank: usize) -> Comm {
    match device {
        Device::Cpu => Comm::Cpu(crate::cpu_backend::CpuComm::new(rank, 4)),
        #[cfg(feature = "cuda")]
        Device::Cuda(_) => Comm::Cuda(crate::cuda_backend::CudaComm::new(rank, 4)),
        #[cfg(feature = "rocm")]
        Device::Rocm(_) => Comm::Rocm(crate::rocm_backend::RocmComm::new(rank, 4)),
        #[allow(unreachable_patterns)]
        other => panic!("no communicator on {other:?}: the mock's devices() lists only backends with one"),
    }
}

fn message(result: crate::Result<()>) -> String {
    match result {
        Err(Error::Msg(text)) => text,
        other => panic!("expected Error::Msg, got {other:?}"),
    }
}

#[test]
fn every_collective_reaches_its_backend() {
    for device in comm_devices() {
        let c = comm(&device, 1);
        let b = backend(&device);
        assert_eq!((c.backend(), c.rank(), c.size()), (b, 1, 4));
        let x = zeros(&device, DType::F32);
        let mut y = zeros(&device, DType::F32);
        c.all_reduce(&x, &mut y, Reduction::Avg).unwrap();
        assert_eq!(last(&y), (b, format!("{b}.all_reduce(Avg)")));
        c.reduce_scatter(&x, &mut y, Reduction::Max).unwrap();
        assert_eq!(last(&y), (b, format!("{b}.reduce_scatter(Max)")));
        c.reduce(&x, &mut y, Reduction::Sum, 3).unwrap();
        assert_eq!(last(&y), (b, format!("{b}.reduce(Sum,3)")));
        c.all_gather(&x, &mut y).unwrap();
        c.all_to_all(&x, &mut y).unwrap();
        c.send_recv(&x, 2, &mut y, 0).unwrap();
        assert_eq!(last(&y), (b, format!("{b}.send_recv(2,0)")));
        c.broadcast(&mut y, 0).unwrap();
        c.recv(&mut y, 2).unwrap();
        assert_eq!(last(&y), (b, format!("{b}.recv(2)")));
        c.send(&x, 3).unwrap();
        c.barrier().unwrap();
        c.synchronize().unwrap();
        let sub = c.split(1, 0).unwrap();
        assert_eq!((sub.backend(), sub.size()), (b, 1));
    }
}

#[test]
fn checks_before_dispatch_name_the_op_the_backend_and_the_rank() {
    for device in comm_devices() {
        let c = comm(&device, 2);
        let b = backend(&device);
        let x = zeros(&device, DType::F32);
        let mut i = zeros(&device, DType::I64);
        let text = message(c.all_reduce(&x, &mut i, Reduction::Sum));
        assert_eq!(text, format!("all_reduce on {b} rank 2: expected recv of dtype F32, got I64"));
        let mut j = zeros(&device, DType::I64);
        let text = message(c.all_reduce(&i, &mut j, Reduction::Avg));
        assert_eq!(text, format!("all_reduce on {b} rank 2: expected a dtype avg takes, got I64"));
        let mut y = zeros(&device, DType::F32);
        let text = message(c.broadcast(&mut y, 4));
        assert_eq!(text, format!("broadcast on {b} rank 2: expected root a rank below 4, got 4"));
        let text = message(c.send_recv(&x, 0, &mut y, 9));
        assert!(text.starts_with(&format!("send_recv on {b} rank 2: expected src a rank below 4")), "{text}");
    }
}

#[test]
fn storages_of_another_backend_are_refused() {
    let all = comm_devices();
    for (a, other) in all.iter().zip(all.iter().skip(1)) {
        let c = comm(other, 0);
        let x = zeros(a, DType::F32);
        let mut y = zeros(a, DType::F32);
        let text = message(c.all_gather(&x, &mut y));
        let b = backend(other);
        assert_eq!(text, format!("all_gather on {b} rank 0: expected storages on the communicator's backend"));
    }
}
