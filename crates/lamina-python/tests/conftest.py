import pytest

import lamina


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "db"


@pytest.fixture
def db(db_path):
    with lamina.open(db_path, engine="fdtree", durability="none") as db:
        yield db
