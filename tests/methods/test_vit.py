import pytest

torch = pytest.importorskip("torch")

from omnigym.envs.methods import vit  # noqa: E402


def test_tokens_have_the_grid_and_the_class_token():
    torch.manual_seed(0)
    grey = vit.build(64, 8)
    assert grey(torch.rand(2, 64, 64)).shape == (2, 64, vit.WIDTH)
    rgb = vit.build(64, 8, channels=3, class_token=True)
    assert rgb(torch.rand(2, 3, 64, 64)).shape == (2, 65, vit.WIDTH)
    with pytest.raises(ValueError, match="divide"):
        vit.build(64, 7)


def test_zero_value_prompts_leave_decoupled_attention_unchanged_but_not_prefix():
    torch.manual_seed(0)
    model = vit.build(64, 8).eval()
    images = torch.rand(2, 64, 64)
    zero = torch.zeros(2, 4, vit.WIDTH)
    prompts = [(torch.randn(2, 4, vit.WIDTH), zero) for _ in range(vit.DEPTH)]
    plain = model(images)
    assert torch.allclose(model(images, prompts, "decoupled"), plain, atol=1e-6)
    assert not torch.allclose(model(images, prompts, "prefix"), plain, atol=1e-4)
    with pytest.raises(ValueError, match="mode"):
        model(images, prompts, "sideways")
