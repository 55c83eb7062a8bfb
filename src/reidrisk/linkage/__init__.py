"""reidrisk.linkage"""
