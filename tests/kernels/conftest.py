"""Kernel-test fixtures: the meshes every kernel is checked on (1 device, 8 devices, 4 x 2)."""

import pytest
from kernel_helpers import MESH_IDS, meshes


@pytest.fixture(params=MESH_IDS)
def mesh(request):
    return meshes()[request.param]
