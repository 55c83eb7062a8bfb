"""reidrisk.data"""
