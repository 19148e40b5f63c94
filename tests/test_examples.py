"""The bundled example model is exactly what our writer produces for seed 0."""

from tflite_writer import example_model


def test_example_model_is_reproducible(repo):
    assert (repo / "examples" / "example-cnn.tflite").read_bytes() == example_model(0)
