import jaxsr


def test_public_names_importable():
    for name in jaxsr.__all__:
        assert getattr(jaxsr, name) is not None, name


def test_version():
    assert isinstance(jaxsr.__version__, str) and jaxsr.__version__.count(".") >= 1
