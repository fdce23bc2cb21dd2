from tinytf.config import load_params
from tinytf.train.variants import cell_params

from .conftest import REPO


def test_a_cell_trains_at_the_studys_lr_and_budget_not_pretrainings():
    params = load_params(REPO / "params.yaml", overrides={"variants.lr": 0.0015, "pretrain.lr": 0.004})
    model, pretrain = cell_params(params.model, params.pretrain, params.variants, "learned", "shift")
    assert pretrain.lr == 0.0015
    assert (pretrain.epochs, pretrain.steps_per_epoch) == (1, params.variants.steps)
    assert pretrain.batch_size == params.variants.batch_size and not pretrain.compile
    assert pretrain.weight_decay == params.pretrain.weight_decay  # the rest of the recipe is pretraining's
    assert (model.pos_encoding, model.head_merge) == ("learned", "shift")
