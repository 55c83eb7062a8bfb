"""reidrisk.collect"""
