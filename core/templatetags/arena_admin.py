"""What the admin's home says about this Arena before anything else."""

from __future__ import annotations

from django import template

from core.services.confinement import agents_confinement

register = template.Library()


@register.simple_tag
def agents_confinement_warning() -> str:
    """Why agents are not confined here and what follows ("" when they are)."""
    return agents_confinement().warning()
