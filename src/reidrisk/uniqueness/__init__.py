"""reidrisk.uniqueness"""
