//! pyo3's names as the generated binding uses them; a Python object is a string here.
use std::marker::PhantomData;

/// A Python exception: its type's name and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyErr {
    pub kind: &'static str,
    pub message: String,
}

pub type PyResult<T> = Result<T, PyErr>;

/// The GIL token.
#[derive(Clone, Copy)]
pub struct Python<'py>(PhantomData<&'py ()>);

impl Python<'_> {
    /// The token, where pyo3 would attach to the interpreter.
    pub fn with_gil<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> R {
        f(Python(PhantomData))
    }
}

/// Any Python object: here, the string it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyAny(pub String);

/// A Python object owned for 'py.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound<'py, T> {
    value: T,
    py: PhantomData<&'py ()>,
}

impl<'py, T> Bound<'py, T> {
    pub fn new(value: T) -> Self {
        Self { value, py: PhantomData }
    }

    pub fn get(&self) -> &T {
        &self.value
    }
}

/// A borrowed Python object.
#[derive(Clone, Copy)]
pub struct Borrowed<'a, 'py, T> {
    value: &'a T,
    py: PhantomData<&'py ()>,
}

impl<'a, 'py> Borrowed<'a, 'py, PyAny> {
    pub fn new(value: &'a PyAny) -> Self {
        Self { value, py: PhantomData }
    }

    pub fn extract<T: FromPyObject<'a, 'py, Error = PyErr>>(self) -> PyResult<T> {
        T::extract(self)
    }
}

pub trait FromPyObject<'a, 'py>: Sized {
    type Error;
    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> Result<Self, Self::Error>;
}

impl<'a, 'py> FromPyObject<'a, 'py> for String {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(obj.value.0.clone())
    }
}

pub trait IntoPyObject<'py>: Sized {
    type Target;
    type Output;
    type Error;
    fn into_pyobject(self, py: Python<'py>) -> Result<Self::Output, Self::Error>;
}

pub mod types {
    use super::{Bound, Python};

    /// A Python str.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct PyString(pub String);

    impl PyString {
        pub fn new<'py>(_py: Python<'py>, s: &str) -> Bound<'py, PyString> {
            Bound::new(PyString(s.to_owned()))
        }
    }
}

pub mod exceptions {
    use super::PyErr;

    macro_rules! exception {
        ($name:ident) => {
            /// The Python exception of this name.
            pub struct $name;

            impl $name {
                pub fn new_err(message: impl Into<String>) -> PyErr {
                    PyErr { kind: stringify!($name), message: message.into() }
                }
            }
        };
    }

    exception!(PyTypeError);
    exception!(PyValueError);
}

pub mod prelude {
    pub use crate::{Borrowed, Bound, FromPyObject, IntoPyObject, PyAny, PyErr, PyResult, Python};
}
