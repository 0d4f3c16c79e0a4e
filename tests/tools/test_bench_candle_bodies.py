"""bench/candle_bodies.py: the backend-specific bodies it rewrites into calls of the profile's
generated methods, found by their shape, and those it leaves alone (code for one backend
already, a wildcard that does real work). The Rust here is written for the tests."""

from __future__ import annotations

from pathlib import Path

from bench.candle_bodies import impl_ranges, one_backend_ranges, overlay_bodies, qtensor_ranges, raw_bytes_ranges
from generator.audit import MISSING, audit, sources

BACKENDS = ("cpu", "cuda", "metal", "rocm")

HOST_ONLY = b"""fn host(t: &Tensor) -> Result<f32> {
    let (g, l) = t.storage_and_layout();
    let data: &[f32] = match &*g {
        Storage::Cpu(cpu) => &cpu.as_slice::<f32>()?[l.start_offset()..],
        _ => candle::bail!("Expected CPU storage"),
    };
    Ok(data[0])
}
"""


def _apply(source: bytes, ranges) -> bytes:
    for start, end, new in sorted(ranges, reverse=True):
        source = source[:start] + new + source[end:]
    return source


def _missing(tmp_path: Path, text: bytes) -> list[str]:
    path = tmp_path / "site.rs"
    path.write_bytes(text)
    files, _ = sources([str(path)], "rust")
    return [str(f) for r in audit(files, BACKENDS, 1) for f in r.findings if f.kind == MISSING]


def test_a_one_backend_match_becomes_the_generated_accessor(tmp_path):
    assert len(_missing(tmp_path, HOST_ONLY)) == 1
    out = _apply(HOST_ONLY, one_backend_ranges(HOST_ONLY, BACKENDS))
    assert b"let cpu = g.as_cpu_storage()?;" in out
    assert b"&cpu.as_slice::<f32>()?[l.start_offset()..]" in out
    assert b"match" not in out
    assert _missing(tmp_path, out) == []


def test_code_for_one_backend_and_real_wildcards_are_left_alone():
    scoped = HOST_ONLY.replace(b"fn host(", b"fn cuda_fwd(").replace(b"Storage::Cpu(cpu)", b"Storage::Cuda(cpu)")
    assert one_backend_ranges(scoped, BACKENDS) == []
    working = HOST_ONLY.replace(b'candle::bail!("Expected CPU storage")', b"&[]")
    assert one_backend_ranges(working, BACKENDS) == []
    unknown = HOST_ONLY.replace(b"Storage::Cpu(cpu)", b"Storage::Vulkan(cpu)")
    assert one_backend_ranges(unknown, BACKENDS) == []


def test_raw_byte_loading_becomes_storage_from_raw_bytes():
    source = b"""fn load(data: &[u8], dtype: DType, device: &Device) -> Result<Storage> {
    let storage = match device {
        Device::Cpu => Storage::Cpu(match dtype {
            DType::F4 => CpuStorage::F4(data.to_vec()),
            _ => unreachable!(),
        }),
        Device::Cuda(d) => Storage::Cuda(d.copy(data)?),
        Device::Metal(d) => Storage::Metal(d.copy(data)?),
    };
    Ok(storage)
}
"""
    out = _apply(source, raw_bytes_ranges(source))
    assert b"let storage = device.storage_from_raw_bytes(data, dtype)?;" in out
    assert b"Device::" not in out
    other = source.replace(b"data.to_vec()", b"vec![0u8]")  # not the raw bytes: left alone
    assert raw_bytes_ranges(other) == []


def test_qtensor_matches_and_its_custom_op_are_replaced(tmp_path):
    source = b"""impl QTensor {
    pub fn device_ptr(&self) -> Result<*const u8> {
        match &self.storage {
            QStorage::Cuda(s) => s.device_ptr(),
            QStorage::Metal(_) | QStorage::Cpu(_) => crate::bail!("not implemented"),
        }
    }
    pub fn dtype(&self) -> GgmlDType {
        match &self.storage {
            QStorage::Cpu(s) => s.dtype(),
            QStorage::Cuda(s) => s.dtype(),
            QStorage::Metal(s) => s.dtype(),
        }
    }
}

#[cfg(feature = "quantized")]
impl crate::CustomOp1 for QTensor {
    fn name(&self) -> &'static str {
        "qmatmul"
    }
}
"""
    out = _apply(source, qtensor_ranges(source))
    assert b"self.storage.device_ptr()" in out
    assert b"CustomOp1" not in out and b"cfg(feature" not in out
    assert out.count(b"QStorage::") == 3  # dtype, which no generated call stands for, stays
    ranges, attributes = impl_ranges(source, "CustomOp1", "QTensor")
    assert len(ranges) == 1 and attributes.strip() == b'#[cfg(feature = "quantized")]'


def test_the_overlay_puts_the_generated_ops_beside_their_types(tmp_path):
    candle = tmp_path / "candle"
    for rel in ("candle-core/src/quantized", "candle-core/src/opgen", "candle-nn/src"):
        (candle / rel).mkdir(parents=True)
    (candle / "candle-core/src/safetensors.rs").write_text("")
    (candle / "candle-core/src/quantized/ggml_file.rs").write_text("")
    (candle / "candle-core/src/quantized/mod.rs").write_text("pub struct QTensor;\n")
    ug = "impl InplaceOp1 for UgIOp1 {\n    fn name(&self) -> &'static str {\n        self.name\n    }\n}\n"
    (candle / "candle-core/src/custom_op.rs").write_text(f'#[cfg(feature = "ug")]\n{ug}')
    (candle / "candle-nn/src/flash.rs").write_bytes(HOST_ONLY)
    generated = tmp_path / "generated"
    generated.mkdir()
    for name in ("qtensor_op.rs", "ug_op.rs"):
        (generated / name).write_text(f"// {name}\n")
        (candle / "candle-core/src/opgen" / name).write_text(f"// {name}\n")
    rewritten = overlay_bodies(candle, generated, BACKENDS)
    assert rewritten == {"candle-nn/src/flash.rs": 1, "candle-core/src/custom_op.rs": 1}
    custom_op = (candle / "candle-core/src/custom_op.rs").read_text()
    assert "impl InplaceOp1" not in custom_op and custom_op.endswith('#[cfg(feature = "ug")]\npub mod ug_op;\n')
    assert (candle / "candle-core/src/custom_op/ug_op.rs").read_text() == "// ug_op.rs\n"
    assert (candle / "candle-core/src/quantized/qtensor_op.rs").is_file()
    assert (candle / "candle-core/src/quantized/mod.rs").read_text().endswith("pub mod qtensor_op;\n")
    assert not any((candle / "candle-core/src/opgen").iterdir())
